//! The bounded pool costly verifications run on, so nobody waits behind someone else's
//! request: a fixed number of worker threads of their own (at a lower scheduling priority than
//! the request threads, so cheap requests win the CPU when both want it), a cap on how many of
//! them one client address may hold at once, and a bounded wait for a free worker. Cheap
//! verifications (the common case) never come here; they run on the request threads.

use crate::errors::ApiError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, SemaphorePermit};

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
    /// How long a costly request over its client's share waits for the share to free up
    /// before it gets 429 (so a client flooding with them is slowed, not answered at once).
    pub share_wait: Duration,
    /// Whether the request threads' work is watched for overruns of its estimate (see
    /// `super::overruns`): where other requests could wait behind it (not on Lambda, which
    /// serves one request at a time).
    pub watch_overruns: bool,
}

impl Default for PoolConfig {
    /// One worker per two CPUs (at least one), two per client, five seconds of waiting for a
    /// worker, half a second for a share.
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        PoolConfig {
            workers: (cpus / 2).max(1),
            per_client: 2,
            wait: Duration::from_secs(5),
            share_wait: Duration::from_millis(500),
            watch_overruns: true,
        }
    }
}

/// A job for a worker thread.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The pool.
pub struct WorkPool {
    config: PoolConfig,
    workers: Semaphore,
    by_client: Mutex<HashMap<String, u32>>,
    /// Woken whenever a share is given back.
    released: Notify,
    /// The worker threads' queue (every admitted job finds a free thread: the semaphore
    /// admits no more jobs than there are threads).
    jobs: Mutex<std::sync::mpsc::Sender<Job>>,
    /// Requests that cost more than their estimate on a request thread.
    overruns: super::overruns::Overruns,
}

/// How much lower than the request threads the workers run (Linux `nice`; 10 gives them
/// about a tenth of a CPU when a request thread wants it too).
const WORKER_NICENESS: i32 = 10;

fn worker_loop(jobs: Arc<Mutex<std::sync::mpsc::Receiver<Job>>>) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority on this thread's own id, no pointers involved.
        let tid = unsafe { libc::gettid() };
        // SAFETY: as above; lowering one's own priority needs no privilege.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, WORKER_NICENESS) };
    }
    loop {
        let job = match jobs.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// A worker held for one costly verification; released when dropped.
pub struct Slot<'p> {
    pool: &'p WorkPool,
    _permit: SemaphorePermit<'p>,
    _client: Share<'p>,
}

/// One client's share of the pool, counted while a costly request is read, waits or runs.
pub struct Share<'p> {
    pool: &'p WorkPool,
    client: String,
}

impl<'p> Share<'p> {
    /// Wait for a worker: 503 when none frees up in time. Dropping the future (the client went
    /// away) gives up the place.
    pub async fn worker(self) -> Result<Slot<'p>, ApiError> {
        let asked = std::time::Instant::now();
        match tokio::time::timeout(self.pool.config.wait, self.pool.workers.acquire()).await {
            Ok(Ok(permit)) => {
                crate::telemetry::pool_wait(asked.elapsed().as_secs_f64());
                Ok(Slot {
                    pool: self.pool,
                    _permit: permit,
                    _client: self,
                })
            }
            _ => {
                crate::telemetry::pool_rejection(503);
                Err(ApiError::Busy { retry_after: 2 })
            }
        }
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        if let Ok(mut by_client) = self.pool.by_client.lock()
            && let Some(n) = by_client.get_mut(&self.client)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by_client.remove(&self.client);
            }
        }
        self.pool.released.notify_waiters();
    }
}

impl WorkPool {
    /// A pool as configured.
    pub fn new(config: PoolConfig) -> Self {
        let threads = config.workers.max(1);
        let (sender, receiver) = std::sync::mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..threads {
            let receiver = receiver.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("costly-{i}"))
                .spawn(move || worker_loop(receiver));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "a costly-verification worker could not start");
            }
        }
        WorkPool {
            workers: Semaphore::new(threads),
            by_client: Mutex::new(HashMap::new()),
            released: Notify::new(),
            jobs: Mutex::new(sender),
            overruns: Default::default(),
            config,
        }
    }

    /// Requests that cost more than their estimate on a request thread, and the clients
    /// demoted to this pool for it.
    pub fn overruns(&self) -> &super::overruns::Overruns {
        &self.overruns
    }

    /// The configuration.
    pub fn config(&self) -> PoolConfig {
        self.config
    }

    /// Count a costly request of `client`: 429 when the client holds its share already. Taken
    /// before a large body is read, so one address cannot have more of them in flight.
    pub fn share(&self, client: &str) -> Result<Share<'_>, ApiError> {
        let mut by_client = self.by_client.lock().map_err(|_| ApiError::Internal)?;
        let n = by_client.entry(client.to_owned()).or_insert(0);
        if *n >= self.config.per_client {
            crate::telemetry::pool_rejection(429);
            return Err(ApiError::TooManyRequests { retry_after: 1 });
        }
        *n += 1;
        Ok(Share {
            pool: self,
            client: client.to_owned(),
        })
    }

    /// Count a costly request of `client`, waiting up to the configured `share_wait` for one
    /// of its requests to finish when it holds its share already; 429 after that.
    pub async fn share_waiting(&self, client: &str) -> Result<Share<'_>, ApiError> {
        let deadline = tokio::time::Instant::now() + self.config.share_wait;
        loop {
            let released = self.released.notified();
            match self.share(client) {
                Ok(share) => return Ok(share),
                Err(refused) => {
                    if tokio::time::timeout_at(deadline, released).await.is_err() {
                        return Err(refused);
                    }
                }
            }
        }
    }

    /// Take a worker for `client`: 429 when the client holds its share already (after waiting
    /// for it), 503 when no worker frees up in time.
    pub async fn admit(&self, client: &str) -> Result<Slot<'_>, ApiError> {
        self.share_waiting(client).await?.worker().await
    }
}

impl Slot<'_> {
    /// Run CPU-heavy work on a worker thread of the pool and wait for it. If the caller goes
    /// away meanwhile, the work still finishes (it is bounded by its budget) and is dropped.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(work());
        });
        let sent = self
            .pool
            .jobs
            .lock()
            .map_err(|_| ApiError::Internal)?
            .send(job);
        if sent.is_err() {
            tracing::error!("the costly-verification workers are gone");
            return Err(ApiError::Internal);
        }
        result.await.map_err(|_| {
            tracing::error!("a costly verification's worker stopped before answering");
            ApiError::Internal
        })
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
            share_wait: Duration::from_millis(20),
            watch_overruns: true,
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
        assert_eq!(again.run(|| 7).await, Ok(7));
    }
}
