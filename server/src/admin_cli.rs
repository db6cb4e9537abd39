//! `verifier admin`: the operator's actions, through a running server's operator port
//! (`--server`, see [`crate::admin`]) or directly on a store (DynamoDB, or a stopped server's
//! embedded store).

use crate::cli::{AdminAction, AdminOpts, BlockTargetOpts, ExportOpts};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use verifier_ports::store::{BlockTarget, Settlement, Store};

/// Where the action goes.
enum Target {
    Server(String),
    Store(Arc<dyn Store>),
}

fn failed(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("verifier admin: {message}");
    ExitCode::from(2)
}

/// Run one `admin` action.
pub fn run(opts: AdminOpts) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    runtime.block_on(async {
        let target = match target(&opts).await {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        match act(&target, &opts.action).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failed(e),
        }
    })
}

async fn target(opts: &AdminOpts) -> Result<Target, String> {
    if let Some(url) = &opts.server {
        return Ok(Target::Server(url.trim_end_matches('/').to_owned()));
    }
    Ok(Target::Store(match opts.store.as_str() {
        "dynamodb" => {
            let table = opts
                .table
                .as_deref()
                .ok_or("--store dynamodb needs --table (or VERIFIER_TABLE)")?;
            Arc::new(verifier_store_dynamo::DynamoStore::from_env(table).await)
        }
        _ => {
            if !opts
                .data_dir
                .join(verifier_store_embedded::backup::STORE_FILE)
                .exists()
            {
                return Err(format!("no store in {}", opts.data_dir.display()));
            }
            Arc::new(
                verifier_store_embedded::EmbeddedStore::open(&opts.data_dir).map_err(|e| {
                    format!(
                        "cannot open the store in {} ({e}); a running server holds it: give --server with its --metrics-listen URL",
                        opts.data_dir.display()
                    )
                })?,
            )
        }
    }))
}

fn target_json(t: &BlockTargetOpts) -> Value {
    match (&t.client, &t.agent) {
        (Some(client), _) => json!({"client": client}),
        (_, Some(agent)) => json!({"agent": agent}),
        _ => json!({}),
    }
}

fn block_target(t: &BlockTargetOpts) -> Result<BlockTarget, String> {
    let body: crate::admin::Target =
        serde_json::from_value(target_json(t)).map_err(|e| e.to_string())?;
    crate::admin::target_of(&body)
}

async fn call(url: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let url = format!("{url}{path}");
    let client = verifier_facilitator_http::tls::reqwest_builder()
        .map_err(|e| e.to_string())?
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| e.to_string())?;
    let request = match body {
        Some(body) => client.post(&url).json(&body),
        None => client.get(&url),
    };
    let answer = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = answer.status();
    let value: Value = answer.json().await.map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}: {}", value["error"]));
    }
    Ok(value)
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

async fn act(target: &Target, action: &AdminAction) -> Result<(), String> {
    match action {
        AdminAction::Block(t) | AdminAction::Unblock(t) => {
            let blocked = matches!(action, AdminAction::Block(_));
            let changed = match target {
                Target::Server(url) => {
                    let path = if blocked {
                        "/admin/block"
                    } else {
                        "/admin/unblock"
                    };
                    call(url, path, Some(target_json(t))).await?["changed"] == true
                }
                Target::Store(store) => store
                    .set_blocked(&block_target(t)?, blocked, now())
                    .await
                    .map_err(|e| e.to_string())?,
            };
            let state = if blocked { "blocked" } else { "not blocked" };
            let what = if changed { "now" } else { "already" };
            println!("{what} {state}");
        }
        AdminAction::Blocks => {
            let list = match target {
                Target::Server(url) => call(url, "/admin/blocks", None).await?,
                Target::Store(store) => {
                    json!(store.blocks().await.map_err(|e| e.to_string())?)
                }
            };
            println!("{list}");
        }
        AdminAction::EraseAgent { agent } => {
            let erased = match target {
                Target::Server(url) => call(
                    url,
                    "/admin/erase-agent",
                    Some(json!({"agent": agent})),
                )
                .await?["erased_outcomes"]
                    .as_u64()
                    .unwrap_or(0),
                Target::Store(store) => {
                    verifier_service::score::check_agent_id(agent)
                        .map_err(|_| "not a valid agent ID".to_owned())?;
                    store.erase_agent(agent).await.map_err(|e| e.to_string())?
                }
            };
            println!("erased {erased} outcomes and the agent's counters");
        }
        AdminAction::ExportPayments(opts) => export(target, opts).await?,
    }
    Ok(())
}

/// A day (`YYYY-MM-DD`, its midnight UTC) or an RFC 3339 time, as unix seconds.
fn instant(text: &str) -> Result<i64, String> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(t.unix_timestamp());
    }
    time::Date::parse(
        text,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .map(|d| d.midnight().assume_utc().unix_timestamp())
    .map_err(|_| format!("{text:?} is neither YYYY-MM-DD nor an RFC 3339 time"))
}

async fn export(target: &Target, opts: &ExportOpts) -> Result<(), String> {
    let since = opts.since.as_deref().map(instant).transpose()?.unwrap_or(0);
    let until = match opts.until.as_deref() {
        Some(t) => instant(t)?,
        None => now() + 1,
    };
    let list: Vec<Settlement> = match target {
        Target::Server(url) => serde_json::from_value(
            call(
                url,
                &format!("/admin/settlements?since={since}&until={until}"),
                None,
            )
            .await?,
        )
        .map_err(|e| e.to_string())?,
        Target::Store(store) => store
            .settlements(since, until, usize::MAX)
            .await
            .map_err(|e| e.to_string())?,
    };
    let csv = opts.format == "csv";
    if csv {
        println!("time,network,payer,amount_atomic,amount_usdc,transaction,route");
    }
    for x in &list {
        let time = time::OffsetDateTime::from_unix_timestamp(x.at)
            .map(verifier_ports::clock::rfc3339_seconds)
            .unwrap_or_default();
        let usdc = x
            .amount
            .parse::<u64>()
            .map(|a| format!("{}.{:06}", a / 1_000_000, a % 1_000_000))
            .unwrap_or_default();
        if csv {
            let field = |v: &str| {
                if v.contains([',', '"', '\n']) {
                    format!("\"{}\"", v.replace('"', "\"\""))
                } else {
                    v.to_owned()
                }
            };
            println!(
                "{time},{},{},{},{usdc},{},{}",
                field(&x.network),
                field(&x.payer),
                field(&x.amount),
                field(&x.transaction),
                field(&x.route)
            );
        } else {
            println!(
                "{}",
                json!({"time": time, "network": x.network, "payer": x.payer, "amount_atomic": x.amount,
                       "amount_usdc": usdc, "transaction": x.transaction, "route": x.route})
            );
        }
    }
    eprintln!("{} settled payments", list.len());
    Ok(())
}
