//! Where a command's files go. `-` is standard output; any other path is an
//! [`OutputFile`]: a file is replaced whole once complete (a failed run never
//! leaves a truncated file nor destroys the file it would have replaced), a
//! device, FIFO or `/dev/stdout` is written in place. Outputs are opened
//! after the configuration was checked and before the work starts, so an
//! unwritable path fails at once.

use anyhow::Context;
use nandlab_trace::OutputFile;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One output: standard output or a file being written. Standard output is
/// buffered as a file is: on its own it flushes at every line, one system
/// call per line of a pretty-printed document (822,397 calls, 0.6 s of system
/// time, for the 9 MB report of a 1.1 M-request timed replay).
pub enum Output {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File { file: OutputFile, path: PathBuf },
}

impl Output {
    pub fn open(path: &Path) -> anyhow::Result<Output> {
        if is_stdout(path) {
            return Ok(Output::Stdout(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout())));
        }
        let file = OutputFile::create(path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Output::File { file, path: path.to_path_buf() })
    }

    /// Flushes the output and, for a file, puts it in place.
    pub fn commit(self) -> anyhow::Result<()> {
        match self {
            Output::Stdout(mut stdout) => Ok(stdout.flush()?),
            Output::File { file, path } => file.commit().with_context(|| format!("writing {}", path.display())),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::Stdout(stdout) => stdout.write(buf),
            Output::File { file, .. } => file.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout(stdout) => stdout.flush(),
            Output::File { file, .. } => file.flush(),
        }
    }
}

pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

/// Opens every requested output; at most one may be `-`. Returns them in
/// order and whether standard output is taken (then no table is printed).
pub fn open_all<const N: usize>(paths: [Option<&Path>; N]) -> anyhow::Result<([Option<Output>; N], bool)> {
    let to_stdout = paths.iter().flatten().filter(|path| is_stdout(path)).count();
    if to_stdout > 1 {
        anyhow::bail!("only one output can go to standard output (`-`)");
    }
    let mut outputs = [const { None }; N];
    for (slot, path) in outputs.iter_mut().zip(paths) {
        *slot = path.map(Output::open).transpose()?;
    }
    Ok((outputs, to_stdout == 1))
}

/// Writes `value` as pretty-printed JSON and commits the output.
pub fn write_json<T: serde::Serialize>(mut output: Output, value: &T) -> anyhow::Result<()> {
    // The serializer makes several writes of a few bytes per value; a buffer
    // in front keeps each one a copy instead of calls down to the file's
    // own buffer (the 9 MB report of a 1.1 M-request timed replay).
    let mut buffered = std::io::BufWriter::with_capacity(JSON_BUFFER_BYTES, &mut output);
    serde_json::to_writer_pretty(&mut buffered, value)?;
    writeln!(buffered)?;
    buffered.flush()?;
    drop(buffered);
    output.commit()
}

const JSON_BUFFER_BYTES: usize = 64 * 1024;

/// Writes `value`'s JSON document flattened into a one-row Parquet table
/// (nested keys joined with `.`, arrays left out) and commits the output.
pub fn write_document_parquet<T: serde::Serialize>(output: Output, value: &T) -> anyhow::Result<()> {
    let document = serde_json::to_value(value)?;
    write_parquet(output, &nandlab_report::Table::from_document(&document)?)
}

/// Writes `rows` (one struct per row) as a Parquet table and commits the output.
pub fn write_rows_parquet<R: serde::Serialize>(output: Output, rows: &[R]) -> anyhow::Result<()> {
    write_parquet(output, &nandlab_report::Table::from_rows(rows)?)
}

/// Writes `rows` (structs of scalars, all with the same fields) as CSV: a
/// header of the field names, then one line per row; `None` is an empty
/// field, text is quoted when it holds a comma, quote or line break.
pub fn write_rows_csv<R: serde::Serialize>(mut output: Output, rows: &[R]) -> anyhow::Result<()> {
    for (index, row) in rows.iter().enumerate() {
        let serde_json::Value::Object(fields) = serde_json::to_value(row)? else {
            anyhow::bail!("a CSV row is not a struct");
        };
        if index == 0 {
            writeln!(output, "{}", fields.keys().map(|name| csv_field(name)).collect::<Vec<_>>().join(","))?;
        }
        let values: Vec<String> = fields
            .values()
            .map(|value| match value {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(text) => csv_field(text),
                other => other.to_string(),
            })
            .collect();
        writeln!(output, "{}", values.join(","))?;
    }
    output.commit()
}

/// `text` as one CSV field (RFC 4180 quoting).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn write_parquet(mut output: Output, table: &nandlab_report::Table) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    table.write_parquet(&mut bytes, "the Parquet output")?;
    output.write_all(&bytes)?;
    output.commit()
}

/// Is `error` a write to a closed pipe (`nandlab … | head`)? Then the reader
/// has all it wanted, and the command ends quietly.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A safety net for output printed with `print!` (which panics when standard
/// output fails): a closed pipe ends the process quietly with status 0, any
/// other failure (a full disk) with an error and status 1 — never a panic
/// with a backtrace. Commands write through `writeln!` and `?` anyway.
pub fn end_quietly_on_failed_printing() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if message.starts_with("failed printing to stdout") {
            if message.contains("Broken pipe") {
                std::process::exit(0);
            }
            eprintln!("error: {message}");
            std::process::exit(1);
        }
        default_hook(info);
    }));
}
