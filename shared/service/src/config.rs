//! Service configuration shared by every function and the local server.

use verifier_engine::cost::Budgets;

/// USDC on Base.
pub const BASE_NETWORK: &str = "eip155:8453";
/// USDC contract on Base.
pub const BASE_USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/// Solana mainnet.
pub const SOLANA_NETWORK: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// USDC mint on Solana.
pub const SOLANA_USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

/// Everything a deployment configures.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Base URL used in documents and receipts, without a trailing slash.
    pub public_url: String,
    /// Free verifications per client address per UTC day.
    pub free_per_day: u64,
    /// Free verifications per UTC day across all clients together (0: none are free).
    pub free_total_per_day: u64,
    /// Bodies above this many bytes are never free (they go to payment).
    pub free_body_limit: usize,
    /// Bodies above this many bytes are refused with 413.
    pub hard_body_limit: usize,
    /// Price of a verification in USDC atomic units (6 decimals).
    pub price_verify_units: u64,
    /// Price of a score lookup in USDC atomic units.
    pub price_score_units: u64,
    /// Base address that receives payments (no Base option is offered without it).
    pub pay_to_base: Option<String>,
    /// Solana owner address that receives payments (no Solana option without it).
    pub pay_to_solana: Option<String>,
    /// The facilitator's Solana fee payer (`extra.feePayer`).
    pub solana_fee_payer: Option<String>,
    /// `maxTimeoutSeconds` of every payment requirement.
    pub payment_timeout_seconds: u64,
    /// The CPU and memory ceilings of unpaid and paid verifications.
    pub budgets: Budgets,
    /// IPv6 callers are one client per network of this prefix length (IPv4: per address).
    pub ipv6_prefix: u8,
    /// CPU estimates are multiplied by this, in millionths: how much slower per operation
    /// this machine is than the reference machine the cost model was measured on
    /// (`--cost-scale`; the calibrate example measures it).
    pub cost_scale_ppm: u64,
    /// A private deployment ([`ServiceConfig::private`]): no payment offered, no 402 ever.
    pub private: bool,
}

/// An allowance without a limit (a private deployment's default): no allowance headers.
pub const UNLIMITED: u64 = u64::MAX;

/// A cost scale as an operator writes it (`1`, `1.5`, `0.25`) in millionths; `None` outside
/// 0.0001–1000.
pub fn cost_scale_ppm(text: &str) -> Option<u64> {
    let scale: f64 = text.trim().parse().ok()?;
    (0.0001..=1000.0)
        .contains(&scale)
        .then(|| (scale * 1e6).round() as u64)
}

/// The default free budget across all clients per day: 100,000 free verifications cost at most
/// 2,500 CPU-seconds at the unpaid ceiling (25 ms each), under 3 % of one CPU's day, or about
/// $0.54 on Lambda at the $5.35 per million measured (docs/performance.md).
pub const DEFAULT_FREE_TOTAL_PER_DAY: u64 = 100_000;

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            public_url: "http://127.0.0.1:8080".into(),
            free_per_day: 1000,
            free_total_per_day: DEFAULT_FREE_TOTAL_PER_DAY,
            free_body_limit: 64 * 1024,
            hard_body_limit: 1024 * 1024,
            price_verify_units: 20_000,
            price_score_units: 10_000,
            pay_to_base: None,
            pay_to_solana: None,
            solana_fee_payer: None,
            payment_timeout_seconds: 60,
            budgets: Budgets::default(),
            ipv6_prefix: crate::client::DEFAULT_IPV6_PREFIX,
            cost_scale_ppm: verifier_engine::cost::UNSCALED_PPM,
            private: false,
        }
    }
}

/// `20000` units → `$0.02`.
pub fn usd(units: u64) -> String {
    format!("${}.{:02}", units / 1_000_000, (units % 1_000_000) / 10_000)
}

impl ServiceConfig {
    /// The private form of this configuration (`--private`, `VERIFIER_PRIVATE`): no payment is
    /// offered and no 402 is ever answered. Every request within the hard body limit may be
    /// served (the free size limit becomes the hard one), under the paid ceiling (the unpaid
    /// ceiling becomes the paid one), with no daily budget across clients; score lookups are
    /// free. The per-client allowance still applies (`allowance`, [`UNLIMITED`] for none);
    /// past it a client gets 429 `allowance_exhausted`.
    pub fn private(mut self, allowance: u64) -> Self {
        self.private = true;
        self.free_per_day = allowance;
        self.free_body_limit = self.hard_body_limit;
        self.budgets.unpaid = self.budgets.paid;
        self.pay_to_base = None;
        self.pay_to_solana = None;
        self.solana_fee_payer = None;
        self
    }

    /// The day's free budget across all clients: none in a private deployment.
    pub fn free_budget(&self) -> Option<u64> {
        (!self.private).then_some(self.free_total_per_day)
    }

    /// Whether the free budget across clients allows no free call at all.
    pub fn no_free_budget(&self) -> bool {
        self.free_budget() == Some(0)
    }

    /// The client key of an address as the edge saw it (see [`crate::client`]).
    pub fn client_key(&self, raw: &str) -> String {
        crate::client::client_key(raw, self.ipv6_prefix)
    }

    /// `public_url` joined with a path.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.public_url.trim_end_matches('/'))
    }
}
