//! Async locks by key, made on demand and forgotten once nobody holds or
//! waits on them: for work that must not run twice at once for one key
//! but may run in parallel for different keys.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};

/// Past this many keys, the map is swept of locks nobody holds.
const SWEEP_AT: usize = 1024;

/// Locks by key.
pub struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, Weak<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        KeyedLocks {
            locks: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> KeyedLocks<K> {
    /// Waits until nobody else holds `key`'s lock; it is held until the
    /// guard is dropped.
    pub async fn lock(&self, key: &K) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().expect("keyed locks");
            match locks.get(key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if locks.len() >= SWEEP_AT {
                        locks.retain(|_, lock| lock.strong_count() > 0);
                    }
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(key.clone(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// How many keys are remembered (held, awaited, or not yet swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks.lock().expect("keyed locks").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_key_runs_one_at_a_time_and_other_keys_in_parallel() {
        let locks = Arc::new(KeyedLocks::<u32>::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (locks, inside, most) = (locks.clone(), inside.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                let _guard = locks.lock(&7).await;
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        // Another key is not held up by key 7.
        let other = tokio::time::timeout(std::time::Duration::from_millis(20), locks.lock(&8)).await;
        assert!(other.is_ok(), "key 8 waited on key 7");
        drop(other);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn locks_nobody_holds_are_swept() {
        let locks = KeyedLocks::<usize>::default();
        for key in 0..SWEEP_AT + 10 {
            drop(locks.lock(&key).await);
        }
        assert!(locks.len() <= 11, "{} kept", locks.len());
    }
}
