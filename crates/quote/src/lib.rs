//! nandlab-quote: how an error message shows what a user gave it (a preset
//! name, a key, a trace line, a file name). A message quotes at most a
//! bounded prefix of any input, with control characters escaped, so a 10 MB
//! preset name gives a one-line error and a NUL or an escape sequence never
//! reaches the terminal raw. Every crate that echoes input in an error uses
//! [`quote`] (or [`quote_bytes`]); the front ends print whole messages, built
//! by other libraries too (TOML and JSON parsers), through [`error_message`].
//! It also reads the one other thing users type the same way everywhere: a
//! byte size with a unit ([`parse_byte_size`]), shared by every crate that takes one.

/// Characters of one input an error message shows at most.
pub const QUOTE_CHARS_MAX: usize = 100;
/// Characters of one line of a whole message at most (a parser's message
/// may quote a line of the input; the message itself is shorter).
pub const MESSAGE_LINE_CHARS_MAX: usize = 1000;
/// Lines of a whole message at most.
pub const MESSAGE_LINES_MAX: usize = 40;

/// `input` as an error message shows it: control characters (NUL, newline,
/// escape, …) written as Rust escapes (`\0`, `\n`, `\u{1b}`), cut after
/// [`QUOTE_CHARS_MAX`] characters with `…(N bytes)` saying how long it was.
#[must_use]
pub fn quote(input: &str) -> String {
    quote_to(input, QUOTE_CHARS_MAX)
}

/// [`quote`] of bytes that may not be UTF-8: invalid bytes shown as `\xNN`.
#[must_use]
pub fn quote_bytes(input: &[u8]) -> String {
    let mut shown = String::new();
    let mut rest = input;
    while !rest.is_empty() && shown.chars().count() < QUOTE_CHARS_MAX {
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(text) => (text, &[][..]),
            Err(error) => {
                let (valid, after) = rest.split_at(error.valid_up_to());
                let bad = error.error_len().unwrap_or(after.len());
                (std::str::from_utf8(valid).unwrap_or_default(), &after[..bad])
            }
        };
        let used = escape_into(&mut shown, valid, QUOTE_CHARS_MAX);
        if used < valid.len() {
            rest = &rest[used..];
            break;
        }
        for byte in invalid {
            shown.push_str(&format!("\\x{byte:02x}"));
        }
        rest = &rest[valid.len() + invalid.len()..];
    }
    cut_note(shown, rest.is_empty(), input.len())
}

/// [`quote`] with a limit of `chars_max` characters.
#[must_use]
pub fn quote_to(input: &str, chars_max: usize) -> String {
    let mut shown = String::new();
    let used = escape_into(&mut shown, input, chars_max);
    cut_note(shown, used == input.len(), input.len())
}

/// A whole message as it may be printed: each line as [`quote_to`] with
/// [`MESSAGE_LINE_CHARS_MAX`], at most [`MESSAGE_LINES_MAX`] lines.
#[must_use]
pub fn bound_message(message: &str) -> String {
    let mut lines: Vec<String> =
        message.lines().take(MESSAGE_LINES_MAX).map(|line| quote_to(line, MESSAGE_LINE_CHARS_MAX)).collect();
    let total = message.lines().count();
    if total > MESSAGE_LINES_MAX {
        lines.push(format!("…({} more lines)", total - MESSAGE_LINES_MAX));
    }
    lines.join("\n")
}

/// An error and its causes as one message, `error: cause: cause …`, each
/// cause once (an error that shows its source, as an OS error after its path
/// does, is not followed by that source again), through [`bound_message`].
#[must_use]
pub fn error_message(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    bound_message(&message)
}

/// Appends `input`'s characters, control ones escaped, until `shown` holds
/// `chars_max` of them (an escape counts as one); returns the bytes of
/// `input` used.
fn escape_into(shown: &mut String, input: &str, chars_max: usize) -> usize {
    for (count, (offset, character)) in (shown.chars().count()..).zip(input.char_indices()) {
        if count >= chars_max {
            return offset;
        }
        if character.is_control() {
            shown.extend(character.escape_debug());
        } else {
            shown.push(character);
        }
    }
    input.len()
}

fn cut_note(mut shown: String, whole: bool, input_bytes: usize) -> String {
    if !whole {
        shown.push_str(&format!("…({input_bytes} bytes)"));
    }
    shown
}

/// Bytes in a size as users write it: a whole number and an optional unit —
/// `K` `M` `G` `T` or `KiB` `MiB` `GiB` `TiB` for powers of 1024, `KB` `MB`
/// `GB` `TB` for powers of 1000, `B` or none for bytes. The error says what is
/// wrong; the caller names the key or option it came from.
pub fn parse_byte_size(text: &str) -> Result<u64, &'static str> {
    let trimmed = text.trim();
    let digits_end = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(digits_end);
    if digits.is_empty() {
        return Err("no leading number");
    }
    let number: u64 = digits.parse().map_err(|_| "number too large")?;
    let multiplier: u64 = match suffix.trim() {
        "" | "B" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err("unknown unit suffix"),
    };
    number.checked_mul(multiplier).ok_or("size overflows 64 bits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_plain_input_is_shown_as_it_is() {
        assert_eq!(quote("femu-32g"), "femu-32g");
        assert_eq!(quote("ü/ß"), "ü/ß");
        assert_eq!(quote_bytes(b"8,0"), "8,0");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(quote("ab\0cd\u{1b}[31m\n"), "ab\\0cd\\u{1b}[31m\\n");
        assert_eq!(quote_bytes(b"a\xffb\x00"), "a\\xffb\\0");
    }

    #[test]
    fn a_10_mb_input_is_cut_and_its_size_said() {
        let huge = "a".repeat(10_000_000);
        let shown = quote(&huge);
        assert_eq!(shown, format!("{}…(10000000 bytes)", "a".repeat(QUOTE_CHARS_MAX)));
        let shown = quote_bytes(huge.as_bytes());
        assert_eq!(shown, format!("{}…(10000000 bytes)", "a".repeat(QUOTE_CHARS_MAX)));
        let escapes = "\0".repeat(1000);
        assert!(quote(&escapes).len() < 2 * QUOTE_CHARS_MAX + 20, "escapes count as one character each");
    }

    #[test]
    fn a_message_keeps_its_lines_each_bounded() {
        let message = format!("TOML parse error at line 1\n  |\n1 | preset = \"{}\"\n  |   ^", "x".repeat(5000));
        let bounded = bound_message(&message);
        assert_eq!(bounded.lines().count(), 4);
        assert!(bounded.len() < MESSAGE_LINE_CHARS_MAX + 200, "{}", bounded.len());
        let long_line = message.lines().nth(2).unwrap_or_default();
        assert!(bounded.contains(&format!("…({} bytes)", long_line.len())), "{bounded}");
        let many = "line\n".repeat(100);
        assert_eq!(bound_message(&many).lines().count(), MESSAGE_LINES_MAX + 1);
    }

    #[derive(Debug)]
    struct Shown(std::io::Error);

    impl std::fmt::Display for Shown {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "t.blk: {}", self.0)
        }
    }

    impl std::error::Error for Shown {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn byte_sizes_parse_binary_and_decimal_units() {
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("64KiB"), Ok(65536));
        assert_eq!(parse_byte_size("4G"), Ok(4 << 30));
        assert_eq!(parse_byte_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_byte_size("64GB"), Ok(64_000_000_000));
        assert_eq!(parse_byte_size("G"), Err("no leading number"));
        assert_eq!(parse_byte_size("12 parsecs"), Err("unknown unit suffix"));
        assert_eq!(parse_byte_size("99999999999T"), Err("size overflows 64 bits"));
    }

    #[test]
    fn an_os_error_shown_by_its_wrapper_is_printed_once() {
        let error = Shown(std::io::Error::from_raw_os_error(2));
        let message = error_message(&error);
        assert_eq!(message.matches("No such file or directory").count(), 1, "{message}");
        assert!(message.starts_with("t.blk: "), "{message}");
    }
}
