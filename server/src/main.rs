//! `verifier`: the whole API on one local port (`serve`), offline checks (`verify`) and a
//! receipt checker for buyers (`receipt verify`).

mod cli;
mod keyfile;
mod offline;
mod serve;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match args.command {
        cli::Command::Serve(opts) => serve::run(opts),
        cli::Command::Verify(opts) => offline::verify(opts),
        cli::Command::Receipt { action: cli::ReceiptAction::Verify(opts) } => offline::verify_receipt(opts),
    }
}
