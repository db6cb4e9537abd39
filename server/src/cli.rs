//! Command-line interface; every `serve` option also reads an environment variable.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The Agent Output Verifier.
#[derive(Debug, Parser)]
#[command(name = "verifier", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve every route of the API on one port, on the embedded store.
    Serve(Box<ServeOpts>),
    /// Check an output offline and print the response, signed when a key is at hand (exit 0
    /// pass, 1 fail, 2 bad input).
    Verify(VerifyOpts),
    /// Print every route (method, path, function, pricing) of the route table.
    Routes,
    /// Ask a running server's /health (exit 0 when it answers 200 within 5 s): the container
    /// image's health check, which has no shell or curl.
    Health {
        /// The health URL.
        #[arg(default_value = "http://127.0.0.1:8080/health")]
        url: String,
    },
    /// Work with receipts.
    Receipt {
        #[command(subcommand)]
        action: ReceiptAction,
    },
    /// The local server's signing key (`keys` works too).
    #[command(visible_alias = "keys")]
    Key {
        #[command(subcommand)]
        action: KeyAction,
    },
    /// The embedded store: back it up (also while the server runs), restore a backup.
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// The operator's actions: block and unblock clients and agents, erase an agent's history,
    /// export settled payments; on a running server (--server), DynamoDB (--store dynamodb)
    /// or a stopped server's embedded store (--data-dir).
    Admin(AdminOpts),
    /// A seller's key-based agent identity: make a key, sign a deliverable.
    Agent {
        #[command(subcommand)]
        action: AgentAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentAction {
    /// Make an Ed25519 key (written owner-only) and print its agent ID (`did:key:z6Mk…`).
    Keygen(AgentKeygenOpts),
    /// Sign a deliverable: print agent_id, output_hash and agent_signature for the request.
    Sign(AgentSignOpts),
}

/// Options of `agent keygen`.
#[derive(Debug, Args)]
pub struct AgentKeygenOpts {
    /// Where to write the key (refused if it exists).
    #[arg(long)]
    pub out: PathBuf,
}

/// Options of `agent sign`.
#[derive(Debug, Args)]
pub struct AgentSignOpts {
    /// The key file `agent keygen` wrote.
    #[arg(long)]
    pub key: PathBuf,
    /// The task the output was delivered for (the request's task_id).
    #[arg(long)]
    pub task_id: String,
    /// The output (a JSON file), as the buyer will submit it.
    pub output: PathBuf,
}

/// `admin`: where, and what.
#[derive(Debug, Args)]
pub struct AdminOpts {
    /// A running local server's --metrics-listen URL (e.g. http://127.0.0.1:9464): the change
    /// is made through it and enforced at once.
    #[arg(long, global = true)]
    pub server: Option<String>,
    /// Without --server: `embedded` (a stopped server's --data-dir) or `dynamodb` (--table;
    /// servers and functions on it apply a block within their refresh interval).
    #[arg(long, env = "VERIFIER_STORE", default_value = "embedded", value_parser = ["embedded", "dynamodb"], global = true)]
    pub store: String,
    /// The DynamoDB table (with --store dynamodb).
    #[arg(long, env = "VERIFIER_TABLE", global = true)]
    pub table: Option<String>,
    /// Directory of the embedded store.
    #[arg(
        long,
        env = "VERIFIER_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
    #[command(subcommand)]
    pub action: AdminAction,
}

/// Whom a block names: one of the two.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct BlockTargetOpts {
    /// A client address or CIDR network (203.0.113.7, 203.0.113.0/24, 2001:db8::/48).
    #[arg(long)]
    pub client: Option<String>,
    /// An agent ID.
    #[arg(long)]
    pub agent: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AdminAction {
    /// Refuse a client network's or an agent's requests with 403 `blocked`.
    Block(BlockTargetOpts),
    /// Lift a block.
    Unblock(BlockTargetOpts),
    /// List the blocks (JSON).
    Blocks,
    /// Erase an agent's history (its score answers as for an agent without data; receipts
    /// already issued stay valid).
    EraseAgent {
        /// The agent ID.
        agent: String,
    },
    /// Print settled payments: time, network, payer, amount, transaction, route.
    ExportPayments(ExportOpts),
}

/// Options of `admin export-payments`.
#[derive(Debug, Args)]
pub struct ExportOpts {
    /// From this day (YYYY-MM-DD, UTC) or time (RFC 3339), inclusive; default: all.
    #[arg(long)]
    pub since: Option<String>,
    /// Until this day or time, exclusive; default: now.
    #[arg(long)]
    pub until: Option<String>,
    /// `jsonl` (one JSON object per line) or `csv`.
    #[arg(long, default_value = "csv", value_parser = ["csv", "jsonl"])]
    pub format: String,
}

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Write a consistent copy of the store to FILE (refused if it exists): through a running
    /// server's --metrics-listen address with --server, else by opening --data-dir (the server
    /// stopped).
    Backup(StoreBackupOpts),
    /// Replace the store in --data-dir with a backup (the server stopped; the replaced file is
    /// kept beside it).
    Restore(StoreRestoreOpts),
}

/// Options of `store backup`.
#[derive(Debug, Args)]
pub struct StoreBackupOpts {
    /// Where to write the backup.
    pub file: PathBuf,
    /// A running server's --metrics-listen URL (e.g. http://127.0.0.1:9464): it makes the
    /// backup while it serves, in its data directory's backups/, and it is moved to FILE.
    #[arg(long)]
    pub server: Option<String>,
    /// Directory of the embedded store.
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

/// Options of `store restore`.
#[derive(Debug, Args)]
pub struct StoreRestoreOpts {
    /// The backup to restore.
    pub file: PathBuf,
    /// Directory of the embedded store.
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum KeyAction {
    /// Make the local signing key (as `serve` does on its first start) unless it exists, and
    /// print its version and where its public half is listed.
    Init(KeyInitOpts),
    /// Make a new signing key; the old one's public half stays listed, so its receipts keep
    /// verifying. A running server signs with the new key after a restart.
    Rotate(KeyInitOpts),
    /// Mark a key revoked in the ring: receipts attested at or after the time are refused by
    /// every verifier that reads the card; revoking the active key rotates it first. Restart a
    /// running server to publish it.
    Revoke(KeyRevokeOpts),
}

/// Options of `key revoke`.
#[derive(Debug, Args)]
pub struct KeyRevokeOpts {
    /// The key's version, as the ring lists it (`keyVersion`).
    pub version: String,
    /// From when (RFC 3339, e.g. when the leak began); now when absent.
    #[arg(long)]
    pub at: Option<String>,
    /// Directory of the local signing key.
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

/// Options of `key init`.
#[derive(Debug, Args)]
pub struct KeyInitOpts {
    /// Directory of the local signing key.
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ReceiptAction {
    /// Verify a signed response against a key list or a live agent card (exit 0 when valid).
    Verify(ReceiptOpts),
}

/// Options of `serve`.
#[derive(Debug, Args)]
pub struct ServeOpts {
    /// Address to listen on.
    #[arg(long, env = "VERIFIER_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where counts and history live: `embedded` (a redb file in --data-dir) or `dynamodb`
    /// (the table named by --table; endpoint and credentials from the standard AWS variables,
    /// e.g. AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local).
    #[arg(long, env = "VERIFIER_STORE", default_value = "embedded", value_parser = ["embedded", "dynamodb"])]
    pub store: String,
    /// The DynamoDB table (with --store dynamodb).
    #[arg(long, env = "VERIFIER_TABLE")]
    pub table: Option<String>,
    /// Create the DynamoDB table (on demand, TTL on expires_at) if it does not exist.
    #[arg(long)]
    pub create_table: bool,
    /// Directory of the embedded store and the local signing key.
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Base URL used in documents and receipts (default: http://<listen>).
    #[arg(long, env = "VERIFIER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Free verifications per client address per UTC day (default 1000; with --private, no
    /// limit unless given).
    #[arg(long, env = "VERIFIER_FREE_ALLOWANCE_PER_DAY")]
    pub free_allowance_per_day: Option<u64>,
    /// A private deployment (behind your own access control): no payment is offered and no
    /// 402 is ever answered; every valid request within --max-body-bytes is served under the
    /// paid ceiling, scores are free; a client past --free-allowance-per-day (if given) gets 429.
    #[arg(long, env = "VERIFIER_PRIVATE", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub private: bool,
    /// How often the operator's blocks are read again from the store, in seconds (changes
    /// through this server's operator routes apply at once; others, e.g. another server on
    /// the same DynamoDB table, within this).
    #[arg(long, env = "VERIFIER_BLOCKS_REFRESH_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub blocks_refresh_seconds: u64,
    /// Days an agent's outcome (a row of its history) is kept after its verification; the
    /// agent's counts stay. 0: kept for good.
    #[arg(long, env = "VERIFIER_OUTCOME_RETENTION_DAYS", default_value_t = 0)]
    pub outcome_retention_days: u32,
    /// Free verifications per UTC day across all clients together; once spent, every free
    /// verification is a 402 (`free_budget_exhausted`) until midnight UTC. 0: none are free.
    #[arg(long, env = "VERIFIER_FREE_CALLS_TOTAL_PER_DAY", default_value_t = verifier_service::config::DEFAULT_FREE_TOTAL_PER_DAY)]
    pub free_calls_total_per_day: u64,
    /// Bodies above this many bytes are never free (they go to payment).
    #[arg(long, env = "VERIFIER_FREE_BODY_LIMIT_BYTES", default_value_t = 65_536)]
    pub free_body_limit_bytes: usize,
    /// Bodies above this many bytes are refused with 413.
    #[arg(long, env = "VERIFIER_MAX_BODY_BYTES", default_value_t = 1_048_576)]
    pub max_body_bytes: usize,
    /// Price of a verification in USDC atomic units (6 decimals; 20000 = $0.02).
    #[arg(long, env = "VERIFIER_PRICE_VERIFY_UNITS", default_value_t = 20_000)]
    pub price_verify_units: u64,
    /// Price of a score lookup in USDC atomic units (10000 = $0.01).
    #[arg(long, env = "VERIFIER_PRICE_SCORE_UNITS", default_value_t = 10_000)]
    pub price_score_units: u64,
    /// Base (eip155:8453) address that receives payments.
    #[arg(long, env = "VERIFIER_PAY_TO_BASE")]
    pub pay_to_base: Option<String>,
    /// Solana address that receives payments.
    #[arg(long, env = "VERIFIER_PAY_TO_SOLANA")]
    pub pay_to_solana: Option<String>,
    /// The x402 facilitator that verifies and settles payments (none: payments are refused).
    #[arg(long, env = "VERIFIER_FACILITATOR_URL")]
    pub facilitator_url: Option<String>,
    /// A static bearer token for the facilitator (self-hosted facilitators).
    #[arg(long, env = "VERIFIER_FACILITATOR_BEARER", hide_env_values = true)]
    pub facilitator_bearer: Option<String>,
    /// A Coinbase CDP API key id (with --facilitator-key-secret): a signed JWT per request.
    #[arg(long, env = "VERIFIER_FACILITATOR_KEY_ID")]
    pub facilitator_key_id: Option<String>,
    /// The CDP API key secret: PEM EC P-256, or base64 of a 64-byte Ed25519 key.
    #[arg(long, env = "VERIFIER_FACILITATOR_KEY_SECRET", hide_env_values = true)]
    pub facilitator_key_secret: Option<String>,
    /// The facilitator's Solana fee payer, offered as `extra.feePayer` (default: read from
    /// the facilitator's /supported).
    #[arg(long, env = "VERIFIER_SOLANA_FEE_PAYER")]
    pub solana_fee_payer: Option<String>,
    /// Origins (scheme://host[:port]) besides the public URL's that may call /mcp; a request
    /// with any other Origin header gets 403 (DNS-rebinding protection).
    #[arg(long, env = "VERIFIER_MCP_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub mcp_allowed_origins: Vec<String>,
    /// Memory (MiB) the compiled schemas kept in the cache may hold, each weighed by what its
    /// validator, patterns and lazy-DFA caches hold.
    #[arg(long, env = "VERIFIER_SCHEMA_CACHE_MIB", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub schema_cache_mib: u64,
    /// CPU ceiling (ms) of a verification without payment; dearer requests go to payment.
    #[arg(long, env = "VERIFIER_UNPAID_CPU_MS", default_value_t = 25)]
    pub unpaid_cpu_ms: u64,
    /// Memory ceiling (MiB) of a verification without payment.
    #[arg(long, env = "VERIFIER_UNPAID_MEMORY_MIB", default_value_t = 16)]
    pub unpaid_memory_mib: u64,
    /// CPU ceiling (ms) of a paid verification; dearer requests are refused (422).
    #[arg(long, env = "VERIFIER_PAID_CPU_MS", default_value_t = 1000)]
    pub paid_cpu_ms: u64,
    /// Memory ceiling (MiB) of a paid verification.
    #[arg(long, env = "VERIFIER_PAID_MEMORY_MIB", default_value_t = 128)]
    pub paid_memory_mib: u64,
    /// How much slower per operation this machine is than the cost model's reference machine
    /// (CPU estimates are multiplied by it; `cargo run --release -p verifier-engine --example
    /// calibrate` measures it). 0.0001 to 1000.
    #[arg(long, env = "VERIFIER_COST_SCALE", default_value = "1", value_parser = parse_cost_scale)]
    pub cost_scale: u64,
    /// Reverse proxies whose forwarding headers name the client: comma-separated addresses or
    /// CIDR networks (`127.0.0.1,10.0.0.0/8`). Only a request whose TCP peer is inside one is
    /// read so (`Forwarded`, else `X-Forwarded-For`: the right-most address not itself a
    /// trusted proxy); from any other peer the headers are ignored. None by default.
    #[arg(long, env = "VERIFIER_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: crate::proxies::TrustedProxies,
    /// IPv6 callers share one free allowance per network of this prefix length (IPv4: one per
    /// address).
    #[arg(long, env = "VERIFIER_IPV6_PREFIX", default_value_t = 64, value_parser = clap::value_parser!(u8).range(16..=128))]
    pub ipv6_prefix: u8,
    /// Costly verifications run at once on the bounded pool. Default: one per two CPUs.
    #[arg(long, env = "VERIFIER_HEAVY_WORKERS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub heavy_workers: Option<u16>,
    /// Costly verifications one client address may have running or waiting at once (more get
    /// 429).
    #[arg(long, env = "VERIFIER_HEAVY_PER_CLIENT", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub heavy_per_client: u32,
    /// Store durability: `sync` (on disk before every answer: the journal's fdatasync) or
    /// `periodic` (fsync every --sync-interval-ms; a crash can lose the last interval's calls).
    #[arg(long, env = "VERIFIER_DURABILITY", default_value = "sync", value_parser = ["sync", "periodic"])]
    pub durability: String,
    /// With `--durability periodic`: the longest time an answered call waits for its fsync.
    #[arg(long, env = "VERIFIER_SYNC_INTERVAL_MS", default_value_t = 50)]
    pub sync_interval_ms: u64,
    /// Log format: `json` (one object per line) or `text`.
    #[arg(long, env = "VERIFIER_LOG_FORMAT", default_value = "json", value_parser = ["json", "text"])]
    pub log_format: String,
    /// Serve the metrics as Prometheus text at `GET /metrics` on this address, a listener of
    /// its own (never the public port). Off when not given.
    #[arg(long, env = "VERIFIER_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
    /// Threads serving requests. Default: one per CPU less one (at least one), which leaves a
    /// CPU to the store's writer thread (group commit and fsync) and keeps the tail latency low.
    #[arg(long, env = "VERIFIER_WORKER_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

/// Options of `verify`.
#[derive(Debug, Args)]
pub struct VerifyOpts {
    /// The JSON Schema file.
    #[arg(long)]
    pub schema: PathBuf,
    /// The output under test.
    #[arg(long)]
    pub output: PathBuf,
    /// A JSON array of rules.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// A JSON object of bounds.
    #[arg(long)]
    pub bounds: Option<PathBuf>,
    /// Make rule violations fail the result.
    #[arg(long)]
    pub enforce_rules: bool,
    /// Also run the content checks, as blocking checks.
    #[arg(long)]
    pub strict: bool,
    /// Print the compact response.
    #[arg(long)]
    pub compact: bool,
    /// The task ID stated in the receipt.
    #[arg(long, default_value = "cli")]
    pub task_id: String,
    /// The agent ID stated in the receipt.
    #[arg(long)]
    pub agent_id: Option<String>,
    /// Sign with this signing key file (a `signing-key.json`).
    #[arg(long, conflicts_with = "unsigned")]
    pub key_file: Option<PathBuf>,
    /// Without --key-file: sign with the local server's key in this directory when it exists
    /// (it is never made here: `verifier key init` makes it).
    #[arg(long, env = "VERIFIER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Do not sign, even when a key is at hand.
    #[arg(long)]
    pub unsigned: bool,
    /// Where the signing key is published (the receipt's `verify.public_key_url` is this
    /// URL's agent card); stated only when given.
    #[arg(long, env = "VERIFIER_PUBLIC_URL")]
    pub public_url: Option<String>,
}

/// Options of `receipt verify`.
#[derive(Debug, Args)]
pub struct ReceiptOpts {
    /// The signed response (JSON file).
    pub response: PathBuf,
    /// A JSON array of public-key entries, or a whole agent card.
    #[arg(
        long,
        conflicts_with = "agent_card",
        required_unless_present = "agent_card"
    )]
    pub keys: Option<PathBuf>,
    /// The agent card URL to fetch the keys from.
    #[arg(long)]
    pub agent_card: Option<String>,
    /// The whole verification request the receipt must be about (its four hashes are
    /// recomputed and compared).
    #[arg(long, conflicts_with_all = ["output", "schema", "rules", "bounds"])]
    pub request: Option<PathBuf>,
    /// The output the receipt must be about (its output_hash).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The schema the receipt must be about (its schema_hash).
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// The rules the receipt must be about (its rules_hash, which covers the bounds too: give
    /// --bounds when bounds were sent).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The bounds sent with the rules (checked as part of the rules_hash).
    #[arg(long)]
    pub bounds: Option<PathBuf>,
}

/// `--cost-scale`: a number from 0.0001 to 1000, kept in millionths.
fn parse_cost_scale(text: &str) -> Result<u64, String> {
    verifier_service::config::cost_scale_ppm(text)
        .ok_or_else(|| "a number from 0.0001 to 1000 (1: as fast as the reference machine)".into())
}
