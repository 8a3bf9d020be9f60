//! Fresh ids and jitter without a random-number crate: a process-wide counter, mixed with a per-process
//! random key from std's [`RandomState`] (the seed std uses against hash flooding).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn keys() -> &'static (RandomState, u64) {
    static KEYS: OnceLock<(RandomState, u64)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let state = RandomState::new();
        let key = state.hash_one(u64::MAX);
        (state, key)
    })
}

/// The next value of the counter and 64 unpredictable bits derived from it.
fn next() -> (u64, u64) {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = keys().0.build_hasher();
    hasher.write_u64(n);
    (n, hasher.finish())
}

/// 64 random-looking bits, new on every call (for jitter, not for secrets).
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn random_u64() -> u64 {
    next().1
}

/// A fresh id in the shape of a version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`). Unique within the
/// process: the low 62 bits are the counter under a fixed per-process mask. Across processes the random
/// key makes a repeat unlikely.
pub(crate) fn fresh_uuid() -> String {
    let (n, random) = next();
    let high = (random & !0xf000) | 0x4000; // version 4
    let low = ((n ^ keys().1) & !(0b11 << 62)) | (0b10 << 62); // RFC 4122 variant
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| fresh_uuid()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(10) {
            assert_eq!(id.len(), 36, "{id}");
            assert_eq!(id.as_bytes()[14], b'4', "{id}");
            assert!(
                matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
                "{id}"
            );
        }
    }
}
