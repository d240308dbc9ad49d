#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nandlab_fuzz::trace_reader(data));
