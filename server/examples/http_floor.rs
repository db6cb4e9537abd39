//! The yardstick of `scripts/bench.sh`'s side-by-side run: an HTTP server that does no work.
//! It accepts connections exactly as `verifier serve` does (the same listener, hyper settings
//! and number of request threads), reads each `POST /verify/schema` body in full and answers
//! with fixed bytes — one of our own answers to the same body, so the response is as long as
//! ours. No parsing, checks, signature or store. On the same machine, under the same `wrk`,
//! its requests/s is the most any server answering this call can reach there: whatever a
//! verification costs comes on top of it. Not shipped.
//!
//! Usage: `http_floor --listen 127.0.0.1:PORT --answer FILE`

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Ok((listen, answer)) => run(listen, answer),
        Err(e) => {
            eprintln!("http_floor: {e}\nusage: http_floor --listen ADDR --answer FILE");
            ExitCode::from(2)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<(SocketAddr, PathBuf), String> {
    let (mut listen, mut answer) = (None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => listen = Some(value.parse().map_err(|_| "--listen is not ADDR:PORT")?),
            "--answer" => answer = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok((
        listen.ok_or("--listen is missing")?,
        answer.ok_or("--answer is missing")?,
    ))
}

fn run(listen: SocketAddr, answer: PathBuf) -> ExitCode {
    let answer = match std::fs::read(&answer) {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            eprintln!("http_floor: cannot read {}: {e}", answer.display());
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(verifier::serve::worker_threads(None))
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("http_floor: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let app = Router::new().route(
        "/verify/schema",
        post(move |body: Bytes| {
            let answer = answer.clone();
            async move {
                // The body is read in full, as a verification reads it, then dropped.
                drop(body);
                ([(CONTENT_TYPE, "application/json")], answer)
            }
        }),
    );
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        verifier::listener::serve(listener, app, 1 << 20, Default::default(), async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("http_floor: {e}");
            ExitCode::from(1)
        }
    }
}
