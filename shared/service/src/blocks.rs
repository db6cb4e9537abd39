//! The operator's blocks in memory: client networks and agent IDs whose requests are refused
//! with 403 `blocked` before any work. Read from the store at start and every refresh
//! interval (and at once after a change through the local server's operator routes); a check
//! is a flag read when nothing is blocked, and at most [`MAX_BLOCKS`] network comparisons.

use ipnet::IpNet;
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use verifier_ports::store::{Block, BlockTarget, MAX_BLOCKS, Store};

#[derive(Default)]
struct Blocked {
    networks: Vec<IpNet>,
    agents: HashSet<String>,
}

/// The blocks this process enforces.
#[derive(Default)]
pub struct BlockList {
    any: AtomicBool,
    current: RwLock<Arc<Blocked>>,
}

impl BlockList {
    /// Enforce `blocks` from now on (entries that do not parse are skipped with a warning).
    pub fn replace(&self, blocks: &[Block]) {
        let mut next = Blocked::default();
        for block in blocks.iter().take(MAX_BLOCKS) {
            match &block.target {
                BlockTarget::Client(net) => match parse_network(net) {
                    Some(net) => next.networks.push(net),
                    None => tracing::warn!("a stored client block is not a network; skipped"),
                },
                BlockTarget::Agent(id) => {
                    next.agents.insert(id.clone());
                }
            }
        }
        let any = !next.networks.is_empty() || !next.agents.is_empty();
        crate::telemetry::blocks(next.networks.len(), next.agents.len());
        if let Ok(mut current) = self.current.write() {
            *current = Arc::new(next);
        }
        self.any.store(any, Ordering::Release);
    }

    /// Whether nothing is blocked (a flag read: callers skip their own work for the check).
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    fn current(&self) -> Option<Arc<Blocked>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.current.read().ok().map(|c| c.clone())
    }

    /// Whether a client (its key: an IPv4 address or an IPv6 network) is inside a blocked
    /// network.
    pub fn client_blocked(&self, client: &str) -> bool {
        let Some(blocked) = self.current() else {
            return false;
        };
        let hit = if let Ok(ip) = client.parse::<IpAddr>() {
            blocked.networks.iter().any(|n| n.contains(&ip))
        } else if let Ok(net) = client.parse::<IpNet>() {
            blocked.networks.iter().any(|n| n.contains(&net))
        } else {
            false
        };
        if hit {
            crate::telemetry::blocked_request("client");
        }
        hit
    }

    /// Whether an agent ID is blocked.
    pub fn agent_blocked(&self, agent_id: &str) -> bool {
        let hit = self
            .current()
            .is_some_and(|blocked| blocked.agents.contains(agent_id));
        if hit {
            crate::telemetry::blocked_request("agent");
        }
        hit
    }

    /// Read the blocks from `store` now (an error keeps the current ones, with a warning).
    pub async fn load(&self, store: &dyn Store) {
        match store.blocks().await {
            Ok(blocks) => self.replace(&blocks),
            Err(e) => {
                tracing::warn!(error = %e, "the blocks could not be read; keeping the current ones")
            }
        }
    }

    /// Read the blocks every `every` for as long as `services` lives.
    pub fn spawn_refresh(services: &Arc<crate::Services>, every: Duration) {
        let services = Arc::downgrade(services);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(s) = services.upgrade() else { return };
                s.blocks.load(s.store.as_ref()).await;
            }
        });
    }
}

/// A client network as an operator writes it: CIDR, or one address (its /32 or /128).
pub fn parse_network(text: &str) -> Option<IpNet> {
    let text = text.trim();
    text.parse::<IpNet>()
        .ok()
        .or_else(|| text.parse::<IpAddr>().ok().map(IpNet::from))
        .map(|n| n.trunc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(target: BlockTarget) -> Block {
        Block { target, since: 0 }
    }

    #[test]
    fn clients_inside_a_blocked_network_and_blocked_agents_are_refused() {
        let list = BlockList::default();
        assert!(!list.client_blocked("203.0.113.9"), "nothing blocked");
        list.replace(&[
            block(BlockTarget::Client("203.0.113.0/24".into())),
            block(BlockTarget::Client("2001:db8::/32".into())),
            block(BlockTarget::Client("198.51.100.7".into())),
            block(BlockTarget::Agent("spammer".into())),
            block(BlockTarget::Client("not a network".into())),
        ]);
        assert!(list.client_blocked("203.0.113.9"));
        assert!(!list.client_blocked("203.0.114.9"));
        assert!(list.client_blocked("198.51.100.7"));
        assert!(!list.client_blocked("198.51.100.8"));
        // IPv6 clients are their /64: inside the /32.
        assert!(list.client_blocked("2001:db8:1:2::/64"));
        assert!(!list.client_blocked("2001:db9::/64"));
        assert!(list.agent_blocked("spammer"));
        assert!(!list.agent_blocked("honest"));
        list.replace(&[]);
        assert!(!list.client_blocked("203.0.113.9") && !list.agent_blocked("spammer"));
    }

    #[test]
    fn an_operator_writes_networks_as_cidr_or_one_address() {
        assert_eq!(
            parse_network("203.0.113.9/24"),
            "203.0.113.0/24".parse().ok()
        );
        assert_eq!(
            parse_network(" 198.51.100.7 "),
            "198.51.100.7/32".parse().ok()
        );
        assert_eq!(parse_network("2001:db8::1"), "2001:db8::1/128".parse().ok());
        assert_eq!(parse_network("example.com"), None);
    }
}
