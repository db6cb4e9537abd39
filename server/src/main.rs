//! `verifier`: the whole API on one local port (`serve`), offline checks (`verify`) and a
//! receipt checker for buyers (`receipt verify`).

use clap::Parser;
use std::process::ExitCode;
use verifier::cli::{AgentAction, Cli, Command, KeyAction, ReceiptAction, StoreAction};
use verifier::{admin_cli, agent, offline, serve, store_cli};

/// mimalloc: the request path allocates many small, short-lived values.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = Cli::parse();
    match args.command {
        Command::Serve(opts) => serve::run(*opts),
        Command::Verify(opts) => offline::verify(opts),
        Command::Routes => offline::routes(),
        Command::Health { url } => offline::health(&url),
        Command::Receipt {
            action: ReceiptAction::Verify(opts),
        } => offline::verify_receipt(opts),
        Command::Key { action } => match action {
            KeyAction::Init(opts) => offline::key_init(opts),
            KeyAction::Rotate(opts) => offline::key_rotate(opts),
            KeyAction::Revoke(opts) => offline::key_revoke(opts),
        },
        Command::Admin(opts) => admin_cli::run(opts),
        Command::Store { action } => match action {
            StoreAction::Backup(opts) => store_cli::backup(opts),
            StoreAction::Restore(opts) => store_cli::restore(opts),
        },
        Command::Agent {
            action: AgentAction::Keygen(opts),
        } => agent::keygen(opts),
        Command::Agent {
            action: AgentAction::Sign(opts),
        } => agent::sign(opts),
    }
}
