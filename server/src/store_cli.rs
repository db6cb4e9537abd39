//! `verifier store backup` and `verifier store restore`.

use crate::cli::{StoreBackupOpts, StoreRestoreOpts};
use std::path::Path;
use std::process::ExitCode;
use verifier_store_embedded::EmbeddedStore;
use verifier_store_embedded::backup::{BackupSummary, restore as restore_store};

fn report(what: &str, summary: &BackupSummary) {
    println!(
        "{what} {}: {} bytes, {} allowance rows, {} agents, {} outcomes, {} payment rows",
        summary.path.display(),
        summary.bytes,
        summary.allowance_rows,
        summary.agents,
        summary.outcomes,
        summary.payment_rows
    );
}

fn failed(command: &str, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("verifier store {command}: {message}");
    ExitCode::from(2)
}

/// `store backup FILE [--server URL]`.
pub fn backup(opts: StoreBackupOpts) -> ExitCode {
    if opts.file.exists() {
        return failed("backup", format!("{} exists", opts.file.display()));
    }
    let made = match &opts.server {
        Some(url) => backup_through(url, &opts.file),
        None => backup_opened(&opts.data_dir, &opts.file),
    };
    match made {
        Ok(summary) => {
            report("backed up to", &summary);
            ExitCode::SUCCESS
        }
        Err(e) => failed("backup", e),
    }
}

/// Ask the running server for a backup, then move it to `file`.
fn backup_through(url: &str, file: &Path) -> Result<BackupSummary, String> {
    let url = format!("{}/admin/backup", url.trim_end_matches('/'));
    let tls = verifier_facilitator_http::tls::client_config().map_err(|e| e.to_string())?;
    let answer = reqwest::blocking::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .and_then(|c| c.post(&url).send())
        .map_err(|e| format!("{url}: {e}"))?;
    let status = answer.status();
    let body: serde_json::Value = answer.json().map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}: {}", body["error"]));
    }
    let made = body["path"]
        .as_str()
        .ok_or(format!("{url}: no path in the answer"))?;
    if std::fs::rename(made, file).is_err() {
        // Another file system: copy, then remove the server's copy.
        std::fs::copy(made, file).map_err(|e| format!("cannot copy {made}: {e}"))?;
        let _ = std::fs::remove_file(made);
    }
    Ok(BackupSummary {
        path: file.to_owned(),
        bytes: body["bytes"].as_u64().unwrap_or(0),
        allowance_rows: body["allowance_rows"].as_u64().unwrap_or(0),
        agents: body["agents"].as_u64().unwrap_or(0),
        outcomes: body["outcomes"].as_u64().unwrap_or(0),
        payment_rows: body["payment_rows"].as_u64().unwrap_or(0),
    })
}

/// Open the store (the server stopped) and back it up.
fn backup_opened(dir: &Path, file: &Path) -> Result<BackupSummary, String> {
    if !dir
        .join(verifier_store_embedded::backup::STORE_FILE)
        .exists()
    {
        return Err(format!("no store in {}", dir.display()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let store = EmbeddedStore::open(dir).map_err(|e| {
            format!(
                "cannot open the store in {} ({e}); a running server holds it: give --server with its --metrics-listen URL",
                dir.display()
            )
        })?;
        store.backup(file).await.map_err(|e| e.to_string())
    })
}

/// `store restore FILE`.
pub fn restore(opts: StoreRestoreOpts) -> ExitCode {
    match restore_store(&opts.data_dir, &opts.file) {
        Ok(summary) => {
            report("restored into", &summary);
            ExitCode::SUCCESS
        }
        Err(e) => failed("restore", e),
    }
}
