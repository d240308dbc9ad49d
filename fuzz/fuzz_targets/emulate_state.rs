#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nandlab_fuzz::emulate_state(data));
