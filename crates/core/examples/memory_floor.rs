//! The memory floor of this machine for the counting loop (docs/architecture.md
//! "Speed"): the latency of a dependent random load and the cost of an
//! independent (prefetchable) random load at the sizes the page FTL's maps
//! have, and sequential read bandwidth; in plain 4 KiB pages and in a map
//! advised for huge pages as the page FTL's ([`nandlab_core::ftl::map_of`]).
//! Times are CPU times, so a busy machine's waiting is left out.
//!
//! `cargo run --release -p nandlab-core --example memory_floor [MiB]`
//! (default: 32, 256 MiB: femu-32g's L2P is 29 MiB, L2P + P2L 61 MiB).

use nandlab_convert::f64_of;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;

/// Seconds this process has run on a CPU (from /proc/self/schedstat, in
/// nanoseconds): on a shared machine, wall-clock time includes waiting for a core.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/schedstat").expect("Linux /proc/self/schedstat");
    let ns: u64 = stat.split_whitespace().next().and_then(|field| field.parse().ok()).expect("run time in ns");
    f64_of(ns) / 1e9
}

/// CPU seconds `work` takes.
fn timed(work: impl FnOnce()) -> f64 {
    let started = cpu_seconds();
    work();
    cpu_seconds() - started
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|arg| arg.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1, 32, 256] } else { sizes };
    println!("{:>8} {:>7} {:>14} {:>16} {:>10}", "MiB", "pages", "dependent ns", "independent ns", "seq GB/s");
    for mib in sizes {
        let entries = mib * (1 << 20) / 4;
        for (label, huge) in [("4 KiB", false), ("2 MiB", true)] {
            let (dependent, independent, bandwidth) = measure(entries, huge);
            println!("{mib:>8} {label:>7} {dependent:>14.1} {independent:>16.2} {bandwidth:>10.1}");
        }
    }
}

/// Nanoseconds per dependent load (pointer chase over one random cycle),
/// nanoseconds per independent random load (a gather), sequential GB/s.
fn measure(entries: usize, huge: bool) -> (f64, f64, f64) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    // Sattolo's algorithm: one cycle through every entry.
    let mut next = if huge { nandlab_core::ftl::map_of(entries, 0) } else { vec![0; entries] };
    for (i, entry) in next.iter_mut().enumerate() {
        *entry = u32::try_from(i).expect("fits");
    }
    for i in (1..entries).rev() {
        let j = rng.random_range(0..i);
        next.swap(i, j);
    }
    let steps: u32 = 20_000_000;
    let dependent = timed(|| {
        let mut at = 0u32;
        for _ in 0..steps {
            at = next[at as usize];
        }
        black_box(at);
    }) * 1e9
        / f64::from(steps);

    let indices: Vec<u32> = (0..steps).map(|_| rng.random_range(0..u32::try_from(entries).expect("fits"))).collect();
    let independent = timed(|| {
        let sum: u64 = indices.iter().map(|&i| u64::from(next[i as usize])).sum();
        black_box(sum);
    }) * 1e9
        / f64::from(steps);

    // At least 4 GiB read, so the CPU clock's granularity does not matter.
    let passes = (4usize << 30).div_ceil(entries * 4);
    let seconds = timed(|| {
        let total: u64 = (0..passes).map(|_| next.iter().map(|&v| u64::from(v)).sum::<u64>()).sum();
        black_box(total);
    });
    let bandwidth = f64_of(passes * entries * 4) / seconds / 1e9;
    (dependent, independent, bandwidth)
}
