//! The fuzz targets (fuzz/src/lib.rs) on the stable toolchain: each runs
//! over its seed corpus (fuzz/seeds/TARGET, which also keeps every crash and
//! hang a campaign of scripts/fuzz.sh found, as a regression input) and over
//! inputs mutated from it by a seeded generator, for a bounded number of
//! inputs and time, so `cargo test` (and CI) keeps them passing between
//! fuzzing campaigns. A seed that takes longer than [`SEED_TIME_MAX`] fails
//! as a hang. A failure prints the generator seed and the input that failed;
//! `NANDLAB_FUZZ_SEED` replays a seed, `NANDLAB_FUZZ_INPUTS` runs more.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../fuzz/src/lib.rs"]
mod targets;

use std::path::Path;
use std::time::{Duration, Instant};

const INPUTS_DEFAULT: u64 = 3_000;
const TIME_MAX: Duration = Duration::from_secs(3);
/// Longest a seed may take (the campaigns' hang limit is 10 s, in a build
/// with every check on): a regression input of a hang must stay fixed.
const SEED_TIME_MAX: Duration = Duration::from_secs(5);

/// SplitMix64: small, seedable, the same on every platform.
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    /// One to four edits of the kinds that find parser bugs: bytes flipped
    /// or set to boundary values, digits grown, ranges cut, copied or
    /// spliced in from another seed.
    fn mutate(&mut self, input: &mut Vec<u8>, seeds: &[Vec<u8>]) {
        const INTERESTING: [&[u8]; 10] =
            [b"\n", b"\0", b"\xff", b"9", b"18446744073709551615", b"4294967295", b"-1", b",", b" + ", b"\xc3"];
        for _ in 0..=self.below(4) {
            let at = self.below(input.len() + 1);
            match self.below(6) {
                0 if !input.is_empty() => {
                    let (index, bit) = (at.min(input.len() - 1), self.below(8));
                    input[index] ^= 1 << bit;
                }
                1 => {
                    let value = INTERESTING[self.below(INTERESTING.len())];
                    input.splice(at..at, value.iter().copied());
                }
                2 if !input.is_empty() => {
                    let end = (at + self.below(16)).min(input.len());
                    input.drain(at.min(end)..end);
                }
                3 if !input.is_empty() => {
                    let start = self.below(input.len());
                    let end = (start + self.below(32)).min(input.len());
                    let copied = input[start..end].to_vec();
                    input.splice(at..at, copied);
                }
                4 => {
                    let other = &seeds[self.below(seeds.len())];
                    let start = self.below(other.len());
                    input.splice(at..at, other[start..].iter().copied());
                }
                _ => {
                    let count = self.below(8);
                    let bytes: Vec<u8> = (0..count).map(|_| self.next() as u8).collect();
                    input.splice(at..at, bytes);
                }
            }
        }
        input.truncate(targets::INPUT_BYTES_MAX);
    }
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
    let mut paths: Vec<_> =
        std::fs::read_dir(&folder).expect("seed corpus").map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|path| std::fs::read(path).unwrap()).collect();
    assert!(!seeds.is_empty(), "{} holds no seeds", folder.display());
    seeds
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|text| text.parse().ok())
}

/// Runs `target` over its seeds, then over mutated inputs.
fn exercise(name: &str, target: fn(&[u8])) {
    let seeds = seeds(name);
    let seed = env_u64("NANDLAB_FUZZ_SEED").unwrap_or(0x006e_616e_646c_6162);
    let inputs = env_u64("NANDLAB_FUZZ_INPUTS").unwrap_or(INPUTS_DEFAULT);
    let mut generator = Generator(seed);
    let started = Instant::now();
    let mut ran = 0;
    for index in 0..inputs + seeds.len() as u64 {
        let mut input = seeds[index as usize % seeds.len()].clone();
        if index >= seeds.len() as u64 {
            generator.mutate(&mut input, &seeds);
        }
        let one = Instant::now();
        let outcome = std::panic::catch_unwind(|| target(&input));
        if outcome.is_err() {
            panic!("{name}: input #{index} (NANDLAB_FUZZ_SEED={seed}) failed: {:?}", String::from_utf8_lossy(&input));
        }
        if index < seeds.len() as u64 && one.elapsed() > SEED_TIME_MAX {
            panic!(
                "{name}: seed #{index} took {:.1} s: {:?}",
                one.elapsed().as_secs_f64(),
                String::from_utf8_lossy(&input)
            );
        }
        ran += 1;
        if started.elapsed() > TIME_MAX && std::env::var_os("NANDLAB_FUZZ_INPUTS").is_none() {
            break;
        }
    }
    eprintln!("{name}: {ran} inputs in {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn trace_reader_target_holds_on_generated_inputs() {
    exercise("trace_reader", targets::trace_reader);
}

#[test]
fn native_reader_target_holds_on_generated_inputs() {
    exercise("native_reader", targets::native_reader);
}

#[test]
fn config_parser_target_holds_on_generated_inputs() {
    exercise("config_parser", targets::config_parser);
}

#[test]
fn replay_small_target_holds_on_generated_inputs() {
    exercise("replay_small", targets::replay_small);
}

#[test]
fn nbd_protocol_target_holds_on_generated_inputs() {
    exercise("nbd_protocol", targets::nbd_protocol);
}

#[test]
fn emulate_state_target_holds_on_generated_inputs() {
    exercise("emulate_state", targets::emulate_state);
    targets::remove_scratch_folder();
}

#[test]
fn admit_tasks_target_holds_on_generated_inputs() {
    exercise("admit_tasks", targets::admit_tasks);
}
