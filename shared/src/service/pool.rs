//! The bounded pool costly verifications run on, so nobody waits behind someone else's
//! request: a fixed number of workers, a cap on how many of them one client address may hold
//! at once, and a bounded wait for a free worker. Cheap verifications (the common case) never
//! come here; they run on the request threads.

use crate::errors::ApiError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};

/// How the pool is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Costly verifications running at once.
    pub workers: usize,
    /// Costly verifications one client address may have running or waiting at once; more get
    /// 429.
    pub per_client: u32,
    /// How long a costly verification may wait for a worker before it gets 503.
    pub wait: Duration,
}

impl Default for PoolConfig {
    /// One worker per two CPUs (at least one), two per client, five seconds of waiting.
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        PoolConfig {
            workers: (cpus / 2).max(1),
            per_client: 2,
            wait: Duration::from_secs(5),
        }
    }
}

/// The pool.
pub struct WorkPool {
    config: PoolConfig,
    workers: Semaphore,
    by_client: Mutex<HashMap<String, u32>>,
}

/// A worker held for one costly verification; released when dropped.
pub struct Slot<'p> {
    _permit: SemaphorePermit<'p>,
    _client: ClientShare<'p>,
}

/// One client's share of the pool, counted while a request runs or waits.
struct ClientShare<'p> {
    pool: &'p WorkPool,
    client: String,
}

impl Drop for ClientShare<'_> {
    fn drop(&mut self) {
        if let Ok(mut by_client) = self.pool.by_client.lock()
            && let Some(n) = by_client.get_mut(&self.client)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_client.remove(&self.client);
            }
        }
    }
}

impl WorkPool {
    /// A pool as configured.
    pub fn new(config: PoolConfig) -> Self {
        WorkPool {
            workers: Semaphore::new(config.workers.max(1)),
            by_client: Mutex::new(HashMap::new()),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> PoolConfig {
        self.config
    }

    /// Take a worker for `client`: 429 when the client holds its share already, 503 when no
    /// worker frees up in time. Dropping the future (the client went away) gives up its place.
    pub async fn admit(&self, client: &str) -> Result<Slot<'_>, ApiError> {
        let share = {
            let mut by_client = self.by_client.lock().map_err(|_| ApiError::Internal)?;
            let n = by_client.entry(client.to_owned()).or_insert(0);
            if *n >= self.config.per_client {
                return Err(ApiError::TooManyRequests { retry_after: 1 });
            }
            *n += 1;
            ClientShare {
                pool: self,
                client: client.to_owned(),
            }
        };
        match tokio::time::timeout(self.config.wait, self.workers.acquire()).await {
            Ok(Ok(permit)) => Ok(Slot {
                _permit: permit,
                _client: share,
            }),
            _ => Err(ApiError::Busy { retry_after: 2 }),
        }
    }
}

impl Slot<'_> {
    /// Run CPU-heavy work on this worker without stalling the request threads' other tasks.
    pub fn run<T>(&self, work: impl FnOnce() -> T) -> T {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let multi =
            Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
        if multi {
            tokio::task::block_in_place(work)
        } else {
            work()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_client_gets_its_share_and_the_rest_wait_or_are_refused() {
        let pool = WorkPool::new(PoolConfig {
            workers: 1,
            per_client: 2,
            wait: Duration::from_millis(50),
        });
        let first = pool.admit("a").await.expect("a worker");
        // Same client: a second may wait (and times out: the only worker is busy) …
        assert_eq!(
            pool.admit("a").await.err(),
            Some(ApiError::Busy { retry_after: 2 })
        );
        // … while a third is over its share even with the waiting one gone.
        let waiting = pool.admit("a");
        let over = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            pool.admit("a").await.err()
        };
        let (waited, refused) = tokio::join!(waiting, over);
        assert!(waited.is_err());
        assert_eq!(refused, Some(ApiError::TooManyRequests { retry_after: 1 }));
        drop(first);
        let again = pool.admit("b").await.expect("freed");
        assert_eq!(again.run(|| 7), 7);
    }
}
