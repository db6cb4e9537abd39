//! What a request thread's work really cost, without a system call per request.
//!
//! A thread's CPU clock is a system call (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, about
//! 0.4 µs here; two per request would be 1.5 % of a verification's CPU). So a request thread only
//! notes when its work started (the monotonic clock, read in user space), and one watcher thread
//! samples the CPU clock of every thread that has been busy for at least one of its ticks
//! ([`TICK`]). When the work ends later than its estimate allows, the thread reads its own CPU
//! clock once and reports what it used since the watcher's first sample: work that ran past its
//! estimate by more than a tick is measured, work that ended in time costs two clock reads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often the watcher samples busy threads.
pub const TICK: Duration = Duration::from_millis(5);

/// One thread's state, shared with the watcher.
struct Slot {
    /// The thread's CPU clock (readable from the watcher).
    clock: libc::clockid_t,
    /// When its current work started (ns since [`base`]; 0: idle).
    busy_since: AtomicU64,
    /// The `busy_since` the sample below belongs to.
    sampled_for: AtomicU64,
    /// The thread's CPU time at the watcher's first sample of that work.
    cpu_at_sample: AtomicU64,
}

/// The process's watcher: the slots of every thread that has run watched work.
struct Watcher {
    slots: Mutex<Vec<Arc<Slot>>>,
    running: AtomicBool,
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| Watcher {
        slots: Mutex::new(Vec::new()),
        running: AtomicBool::new(false),
    })
}

/// The process's reference instant (monotonic nanoseconds are counted from it, so 0 means
/// idle).
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(|| Instant::now() - Duration::from_nanos(1))
}

fn now_ns() -> u64 {
    u64::try_from(base().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A CPU clock's reading, in nanoseconds (0 if it cannot be read).
fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for clock_gettime, which writes only into it.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

thread_local! {
    static SLOT: Option<Arc<Slot>> = register();
}

/// This thread's slot, registered with the watcher (which starts with the first one).
fn register() -> Option<Arc<Slot>> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid for the calling thread; the out-pointer is valid.
    if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } != 0 {
        return None;
    }
    let slot = Arc::new(Slot {
        clock,
        busy_since: AtomicU64::new(0),
        sampled_for: AtomicU64::new(0),
        cpu_at_sample: AtomicU64::new(0),
    });
    let w = watcher();
    w.slots.lock().ok()?.push(slot.clone());
    if !w.running.swap(true, Ordering::AcqRel) {
        let spawned = std::thread::Builder::new()
            .name("cpu-watch".into())
            .spawn(watch);
        if spawned.is_err() {
            w.running.store(false, Ordering::Release);
            tracing::error!("the CPU watcher could not start: overruns are not measured");
        }
    }
    Some(slot)
}

/// The watcher's loop: sample the CPU clock of every thread busy with work it has not sampled.
fn watch() {
    let w = watcher();
    loop {
        std::thread::sleep(TICK);
        let Ok(slots) = w.slots.lock() else {
            return;
        };
        for slot in slots.iter() {
            let busy = slot.busy_since.load(Ordering::Acquire);
            if busy != 0 && slot.sampled_for.load(Ordering::Relaxed) != busy {
                slot.cpu_at_sample
                    .store(read_clock(slot.clock), Ordering::Relaxed);
                slot.sampled_for.store(busy, Ordering::Release);
            }
        }
    }
}

/// Work being watched on this thread.
pub struct Watched {
    slot: Option<Arc<Slot>>,
    started: u64,
}

/// Start watching the calling thread's work.
pub fn begin() -> Watched {
    let slot = SLOT.with(Clone::clone);
    let started = now_ns();
    if let Some(slot) = &slot {
        slot.busy_since.store(started, Ordering::Release);
    }
    Watched { slot, started }
}

impl Watched {
    /// The work is done: if it took longer than `limit_ns` (wall time) and the watcher sampled
    /// it, the CPU it used since that sample (a lower bound of its CPU); `None` when it ended
    /// within `limit_ns` (its CPU cannot have been more) or ran less than a tick.
    pub fn finish(self, limit_ns: u64) -> Option<u64> {
        let slot = self.slot?;
        slot.busy_since.store(0, Ordering::Release);
        if now_ns().saturating_sub(self.started) <= limit_ns
            || slot.sampled_for.load(Ordering::Acquire) != self.started
        {
            return None;
        }
        let at_sample = slot.cpu_at_sample.load(Ordering::Relaxed);
        Some(read_clock(slot.clock).saturating_sub(at_sample))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_work_is_not_measured_and_long_work_is() {
        assert_eq!(begin().finish(1_000_000_000), None);
        // Busy until the watcher has sampled this work (it may be starved on a loaded machine,
        // so this waits for the sample, not for a wall-clock time), then for 20 ms more of this
        // thread's own CPU: at least that much is measured.
        let w = begin();
        let slot = w.slot.clone().expect("a watched thread");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        while slot.sampled_for.load(Ordering::Acquire) != w.started && Instant::now() < deadline {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let cpu = || read_clock(libc::CLOCK_THREAD_CPUTIME_ID);
        let after_sample = cpu();
        while cpu() - after_sample < 20_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = w.finish(1_000_000).expect("sampled and measured");
        assert!(used >= 20_000_000, "{used}");
        // Sleeping is not CPU.
        let w = begin();
        std::thread::sleep(Duration::from_millis(30));
        assert!(w.finish(1_000_000).is_none_or(|used| used < 5_000_000));
    }
}
