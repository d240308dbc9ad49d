#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nandlab_fuzz::admit_tasks(data));
