//! One module per subcommand: its clap arguments and a `run` function.

pub mod admit;
pub mod advise;
pub mod bench;
pub mod capture;
pub mod dhrd;
pub mod emulate;
pub mod emulate_mark;
pub mod fsload;
pub mod lifetime;
pub mod presets;
pub mod replay;
pub mod reproduce;
pub mod run;
pub mod trace;
