//! One grammar across every subcommand, read from their `--help` as a user
//! reads it: a flag that means the same thing has the same name and the same
//! form everywhere, and every choice shows its default.
//!
//! - `--timing [on|off]` (a bare `--timing` means `on`) wherever time can be simulated;
//! - `--format` names a trace's format (`trace convert --to` the output's), never `--from`;
//! - `--preset` picks the simulated device; `--trace-device` picks one traced device of a
//!   trace; a bare `--device` means neither and is refused here;
//! - an option with a fixed set of values says its default.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

fn help(path: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(path)
        .arg("-h")
        .stdin(Stdio::null())
        .output()
        .expect("nandlab runs");
    assert!(output.status.success(), "nandlab {} -h failed", path.join(" "));
    String::from_utf8(output.stdout).expect("UTF-8 help")
}

/// The subcommands listed under `Commands:` in a help text (without `help`).
fn subcommands(text: &str) -> Vec<String> {
    let Some(start) = text.find("Commands:\n") else { return Vec::new() };
    text[start..]
        .lines()
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command path (`["replay"]`, `["trace", "convert"]`, …) with its help text.
fn every_command() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let text = help(&path);
        for name in subcommands(&text) {
            let mut child = path.clone();
            child.push(name);
            pending.push(child);
        }
        found.push((format!("nandlab {}", path.join(" ")).trim_end().to_owned(), text));
    }
    found
}

/// Each option of a help text with its description: the option's line and
/// its continuation lines, joined.
fn options(text: &str) -> Vec<String> {
    let mut options: Vec<String> = Vec::new();
    let mut in_options = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if line.ends_with(':') && !line.starts_with(' ') {
            in_options = line == "Options:";
            continue;
        }
        if !in_options {
            continue;
        }
        if trimmed.starts_with("--") || trimmed.starts_with("-") && trimmed.get(2..4) == Some(", ") {
            options.push(trimmed.to_owned());
        } else if let Some(last) = options.last_mut() {
            last.push(' ');
            last.push_str(trimmed);
        }
    }
    options
}

/// The long flag an option line starts with (`--timing`), and what follows it up to the description.
fn flag(option: &str) -> (&str, &str) {
    let option = option.split_once(", ").map_or(option, |(short, rest)| if short.len() == 2 { rest } else { option });
    let end = option.find(char::is_whitespace).unwrap_or(option.len());
    (&option[..end], option[end..].trim_start())
}

#[test]
fn every_subcommand_speaks_one_grammar() {
    let commands = every_command();
    assert!(commands.len() >= 14, "found only {} commands", commands.len());
    let mut wrong = Vec::new();
    for (command, text) in &commands {
        for option in options(text) {
            let (name, rest) = flag(&option);
            match name {
                "--timing" if !rest.starts_with("[<TIMING>]") => {
                    wrong.push(format!("{command}: `--timing` must take an optional on|off: {option}"));
                }
                "--from" => wrong.push(format!("{command}: a trace format is `--format`: {option}")),
                "--device" => wrong.push(format!(
                    "{command}: `--device` is ambiguous; `--preset` picks the device, `--trace-device` a traced one"
                )),
                _ => {}
            }
            if rest.starts_with("<FORMAT>") && !matches!(name, "--format" | "--to") {
                wrong.push(format!("{command}: a trace format is `--format`, not `{name}`"));
            }
            let says_default = option.contains("[default:") || option.contains("Default");
            if option.contains("[possible values:") && !says_default {
                wrong.push(format!("{command}: `{name}` does not say its default: {option}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} departures from the grammar:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_grammar_check_sees_what_it_checks() {
    // Guards against a parser that finds nothing and so passes everything.
    let commands = every_command();
    let flags_of = |wanted: &str| {
        let (_, text) = commands.iter().find(|(command, _)| command == wanted).expect("command listed");
        options(text).iter().map(|option| flag(option).0.to_owned()).collect::<Vec<_>>()
    };
    for command in ["nandlab run", "nandlab replay", "nandlab bench", "nandlab admit"] {
        assert!(flags_of(command).contains(&"--timing".to_owned()), "{command} has --timing");
    }
    let replay = flags_of("nandlab replay");
    for expected in ["--format", "--trace-device", "--preset", "--discard"] {
        assert!(replay.contains(&expected.to_owned()), "replay has {expected}: {replay:?}");
    }
    assert!(flags_of("nandlab trace convert").contains(&"--format".to_owned()));
    assert!(flags_of("nandlab admit").contains(&"--preset".to_owned()));
}
