//! V8's snapshot checksum, computed fast and linked in place of V8's own.
//!
//! `SnapshotCreator::CreateBlob` checksums every blob three times (the
//! read-only part, the whole blob, then a verification pass). The `v8` crate
//! builds V8 without zlib, so `v8::internal::Checksum` is a Fletcher-32 with
//! two modulo reductions per byte, a large share of a stateful run's CPU
//! (docs/performance.md, round 3, has the measurements).
//!
//! The library defines that function alone in its own archive member
//! (`snapshot-utils.o`). A definition of the same symbol that the linker has
//! already seen when it reaches the archive keeps that member out, so V8's
//! callers use this one. [`ensure_linked`] makes the definition part of every
//! binary that starts V8. The result is bit-for-bit V8's (the tests compare
//! it with V8's loop), so blobs and code caches made with either
//! implementation check against the other. Should a future `v8` release move
//! the function, the link fails with a duplicate symbol, or, if it became
//! inline, [`calls`] stays at zero and a test says so.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per lane step; the lane sums below are per byte position in it.
const LANES: usize = 32;
/// Lane steps per block: the largest count whose weighted lane sums cannot
/// overflow a `u32` (255 · m(m+1)/2 < 2³²) would be 5803; a power of two
/// well below that keeps blocks cache-sized.
const STEPS_PER_BLOCK: usize = 1024;
const BLOCK: usize = LANES * STEPS_PER_BLOCK;
const MOD: u64 = 65535;

static CALLS: AtomicU64 = AtomicU64::new(0);

/// How many times V8 has called this process's checksum.
#[cfg(test)]
pub(crate) fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// V8's `uint32_t Checksum(base::Vector<const uint8_t>)`. `base::Vector` is
/// a trivially copyable pointer and length, which the x86-64 and AArch64
/// C++ ABIs pass in the first two argument registers, as they do these two.
///
/// # Safety
/// `data` points to `len` readable bytes (or `len` is 0), as V8 guarantees.
#[unsafe(export_name = "_ZN2v88internal8ChecksumENS_4base6VectorIKhEE")]
unsafe extern "C" fn v8_checksum(data: *const u8, len: usize) -> u32 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller passes a live buffer of `len` bytes.
        unsafe { std::slice::from_raw_parts(data, len) }
    };
    fletcher32(bytes)
}

/// Keeps [`v8_checksum`] in every binary that initialises V8: referencing it
/// from the platform's start-up code pulls its object file into the link
/// before the V8 archive is searched.
pub(crate) fn ensure_linked() {
    std::hint::black_box(v8_checksum as unsafe extern "C" fn(*const u8, usize) -> u32);
}

/// V8's checksum: `sum1 = (sum1 + byte) % 65535; sum2 = (sum2 + sum1) % 65535`
/// over the bytes, then `sum2 << 16 | sum1`.
///
/// Both sums are reduced once per block instead of per byte, which gives
/// the same residues. Within a block, byte `k` of `n` adds `b` to `sum1` and
/// `(n - k) · b` to `sum2`; the lane sums compute that with independent adds
/// the compiler vectorises.
fn fletcher32(bytes: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u64, 0u64);
    let mut blocks = bytes.chunks_exact(BLOCK);
    for block in &mut blocks {
        (sum1, sum2) = add_block(sum1, sum2, block);
    }
    let rest = blocks.remainder();
    let steps = rest.chunks_exact(LANES);
    let whole = rest.len() - steps.remainder().len();
    (sum1, sum2) = add_block(sum1, sum2, &rest[..whole]);
    for &byte in steps.remainder() {
        sum1 += u64::from(byte);
        sum2 += sum1;
    }
    ((sum2 % MOD) << 16 | (sum1 % MOD)) as u32
}

/// Adds a block of whole lane steps (at most [`BLOCK`] bytes) to the sums,
/// returning them reduced.
fn add_block(sum1: u64, sum2: u64, block: &[u8]) -> (u64, u64) {
    debug_assert!(block.len() <= BLOCK && block.len().is_multiple_of(LANES));
    // Per lane i: `a[i]` sums its bytes; `b[i]` sums `a[i]` after each step,
    // so a byte of step j of m counts m - j times.
    let mut a = [0u32; LANES];
    let mut b = [0u32; LANES];
    for step in block.chunks_exact(LANES) {
        for i in 0..LANES {
            a[i] += u32::from(step[i]);
            b[i] += a[i];
        }
    }
    let n = block.len() as u64;
    let mut block_sum1 = 0u64;
    let mut weighted = 0u64;
    for i in 0..LANES {
        block_sum1 += u64::from(a[i]);
        // Byte k = LANES·j + i has weight n - k = LANES·(m - j) - i.
        weighted += LANES as u64 * u64::from(b[i]);
        weighted -= i as u64 * u64::from(a[i]);
    }
    let sum2 = (sum2 + n * sum1 + weighted) % MOD;
    ((sum1 + block_sum1) % MOD, sum2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// V8's loop, as written in `v8/src/snapshot/snapshot-utils.cc` without zlib.
    fn reference(bytes: &[u8]) -> u32 {
        let (mut sum1, mut sum2) = (0u32, 0u32);
        for &byte in bytes {
            sum1 = (sum1 + u32::from(byte)) % 65535;
            sum2 = (sum2 + sum1) % 65535;
        }
        sum2 << 16 | sum1
    }

    fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn matches_v8_on_every_length_around_the_lane_and_block_edges() {
        let data = pseudo_random(3 * BLOCK + 3 * LANES + 7, 1);
        let edges = [
            0,
            1,
            LANES - 1,
            LANES,
            LANES + 1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
        ];
        for len in (0..2 * LANES + 3).chain(edges).chain([data.len()]) {
            assert_eq!(
                fletcher32(&data[..len]),
                reference(&data[..len]),
                "length {len}"
            );
        }
    }

    #[test]
    fn matches_v8_where_the_sums_grow_fastest() {
        // All bytes 0xFF maximise every partial sum: the overflow case.
        let ones = vec![0xFF; 4 * BLOCK + 5];
        assert_eq!(fletcher32(&ones), reference(&ones));
        let zeros_then_ones: Vec<u8> = (0..2 * BLOCK + 9)
            .map(|i| if i < BLOCK { 0 } else { 0xFF })
            .collect();
        assert_eq!(fletcher32(&zeros_then_ones), reference(&zeros_then_ones));
    }

    #[test]
    fn matches_v8_on_a_snapshot_sized_input() {
        let data = pseudo_random(410_000, 7);
        assert_eq!(fletcher32(&data), reference(&data));
    }

    /// The engine links this checksum in place of V8's; this fails if V8
    /// still calls its own, for instance after a `v8` upgrade made it
    /// inline. In this process, where the count is: an engine worker's
    /// snapshots are checksummed in the worker.
    #[tokio::test]
    async fn snapshots_are_checksummed_by_the_linked_replacement() {
        use std::sync::Arc;

        use crate::engine::{Engine, EngineConfig, RunRequest, RunStatus};
        use crate::heap::{FileHeapStore, HeapStore};

        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path()));
        let engine = Engine::new(EngineConfig::in_process(), Some(store));
        let run = |code: &str, heap| RunRequest {
            code: code.into(),
            stateful: true,
            heap,
            ..Default::default()
        };
        let before = calls();
        let first = engine
            .run(run("globalThis.kept = 'yes'", None))
            .await
            .unwrap();
        assert_eq!(first.outcome.status, RunStatus::Completed, "{first:#?}");
        // A blob is checksummed at least twice: once made, once verified.
        assert!(calls() >= before + 2);
        let next = engine
            .run(run("kept", first.outcome.heap.clone()))
            .await
            .unwrap();
        assert_eq!(next.outcome.result.as_deref(), Some("\"yes\""));
    }
}
