//! fio job files as nandlab jobs (`nandlab run JOB.fio`). Reads fio's INI
//! format — `[global]` and job sections, `include FILE`, comments from `;` or
//! `#` to the end of a line, `${VAR}` from the environment, fio's units
//! (`4k` = 4096 under the default `kb_base=1024`) — and maps each job section,
//! `numjobs` times, onto a `[[job]]` table over the device the preset and
//! overrides describe. Options with no counterpart on a simulated device are
//! named in warnings (file:line); a value nandlab cannot represent is an
//! error naming the file, line, option and value, with a likely fix. Option
//! by option, docs/fio.md says what each maps to or why not.

use crate::config::{self, Config, ConfigError, Document};
use crate::device::Geometry;
use crate::workload::jobs::JOBS_MAX;
use nandlab_convert::{f64_of, saturating};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// Bytes of a job file, and of each file it includes, at most.
pub const FILE_BYTES_MAX: u64 = 16 << 20;
/// Bytes read for one job file and all its includes together at most.
const TOTAL_BYTES_MAX: u64 = 64 << 20;
/// Includes nest at most this deep (a file that includes itself stops here).
const INCLUDE_DEPTH_MAX: usize = 16;
/// fio's default block size (`bs`), bytes.
const DEFAULT_BLOCK_BYTES: u64 = 4096;
/// fio's default share of reads in a mixed job (`rwmixread`), percent.
const DEFAULT_READ_PERCENT: u64 = 50;

/// Where a line came from: a file and its 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", nandlab_quote::quote(&self.file), self.line)
    }
}

/// Why a job file is refused.
#[derive(Debug)]
pub enum FioError {
    /// The file (or one it includes) cannot be read.
    Read { file: String, reason: String },
    /// A line, or an option's value, the mapping cannot represent; `option`
    /// is empty for a line that is no option (a malformed section header).
    Refused { place: Place, option: String, value: String, reason: String },
    /// The jobs, mapped, are refused by the configuration rules (a key named).
    Config { file: String, error: ConfigError },
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read { file, reason } => write!(f, "fio job file {}: {reason}", nandlab_quote::quote(file)),
            Self::Refused { place, option, reason, .. } if option.is_empty() => {
                write!(f, "fio job file {place}: {reason}")
            }
            Self::Refused { place, option, value, reason } if value.is_empty() => {
                write!(f, "fio job file {place}: `{}`: {reason}", nandlab_quote::quote(option))
            }
            Self::Refused { place, option, value, reason } => {
                let (option, value) = (nandlab_quote::quote(option), nandlab_quote::quote(value));
                write!(f, "fio job file {place}: `{option}={value}`: {reason}")
            }
            Self::Config { file, error } => write!(f, "fio job file {}: {error}", nandlab_quote::quote(file)),
        }
    }
}

impl std::error::Error for FioError {}

/// An option the mapping reads differently from fio or not at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioWarning {
    pub place: Place,
    pub option: String,
    pub reason: String,
}

impl fmt::Display for FioWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fio job file {}: `{}`: {}", self.place, nandlab_quote::quote(&self.option), self.reason)
    }
}

/// One `option[=value]` line, its value with `${VAR}` expanded.
#[derive(Clone, Debug)]
struct Setting {
    key: String,
    value: Option<String>,
    place: Place,
}

#[derive(Clone, Debug)]
struct Section {
    name: String,
    place: Place,
    settings: Vec<Setting>,
}

/// A job file as read: its sections in order, includes spliced in.
#[derive(Clone, Debug)]
pub struct JobFile {
    file: String,
    sections: Vec<Section>,
}

/// A job file's jobs over one device, and what the reading noticed.
#[derive(Clone, Debug)]
pub struct MappedJobs {
    /// `[[job]]` tables in the configuration's layout.
    pub jobs: Vec<toml::Table>,
    /// The run's seed, from the jobs' `randseed`.
    pub seed: Option<u64>,
    pub warnings: Vec<FioWarning>,
}

/// A run configured from a job file.
#[derive(Clone, Debug)]
pub struct FioRun {
    pub config: Config,
    pub geometry: Geometry,
    pub warnings: Vec<FioWarning>,
}

/// Whether a path names a fio job file (its extension is `.fio`).
pub fn is_job_file(path: &Path) -> bool {
    path.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("fio"))
}

/// The configuration of `nandlab run JOB.fio`: the device from `preset`
/// (default [`config::DEFAULT_PRESET`]) and the overrides that are not job
/// keys, then the file's jobs mapped over that device, then every override
/// (`job.NAME.KEY=…` and `job=…` too) and `seed` on top. `env` looks up
/// `${VAR}`.
pub fn config_from_job_file(
    path: &Path,
    preset: Option<&str>,
    overrides: &[String],
    seed: Option<u64>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<FioRun, FioError> {
    let file = read_job_file(path, env)?;
    let config_error = |error| FioError::Config { file: file.file.clone(), error };
    let preset = preset.unwrap_or(config::DEFAULT_PRESET);
    let device_overrides: Vec<String> =
        overrides.iter().filter(|assignment| !is_job_assignment(assignment)).cloned().collect();
    let (_, geometry) = config::from_sources(Some(preset), None, &device_overrides, None).map_err(config_error)?;
    let mapped = file.map(&geometry)?;
    let mut table = toml::Table::new();
    table.insert("job".to_owned(), toml::Value::Array(mapped.jobs.into_iter().map(toml::Value::Table).collect()));
    if let Some(file_seed) = mapped.seed {
        table.insert("seed".to_owned(), toml::Value::Integer(i64::try_from(file_seed).unwrap_or(i64::MAX)));
    }
    let (config, geometry) =
        config::from_sources(Some(preset), Some(Document::Table(table)), overrides, seed).map_err(config_error)?;
    Ok(FioRun { config, geometry, warnings: mapped.warnings })
}

/// `job=…` and `job.NAME.KEY=…` assignments (they need the file's jobs).
fn is_job_assignment(assignment: &str) -> bool {
    let key = assignment.split_once('=').map_or(assignment, |(key, _)| key).trim();
    key == "job" || key.starts_with("job.")
}

/// Reads a job file and the files it includes; `env` looks up `${VAR}`
/// (an unset variable expands to nothing, as in fio).
pub fn read_job_file(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<JobFile, FioError> {
    let mut reader = Reader { env, sections: Vec::new(), budget: TOTAL_BYTES_MAX };
    reader.read(path, 0, false)?;
    Ok(JobFile { file: path.display().to_string(), sections: reader.sections })
}

struct Reader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    sections: Vec<Section>,
    /// Bytes the remaining includes may still read.
    budget: u64,
}

impl Reader<'_> {
    fn read(&mut self, path: &Path, depth: usize, included: bool) -> Result<(), FioError> {
        let file = path.display().to_string();
        let text = self.read_bounded(path).map_err(|reason| FioError::Read { file: file.clone(), reason })?;
        for (index, line) in text.lines().enumerate() {
            let place = Place { file: file.clone(), line: index + 1 };
            let content = line.find([';', '#']).map_or(line, |comment| &line[..comment]).trim();
            if content.is_empty() {
                continue;
            }
            if let Some(header) = content.strip_prefix('[') {
                if included {
                    return Err(refused(&place, "", content, "an included file may not hold [sections] (fio's rule)"));
                }
                let name = header.strip_suffix(']').ok_or_else(|| {
                    refused(&place, "", content, "a section header is `[NAME]`, on a line of its own")
                })?;
                self.sections.push(Section { name: name.trim().to_owned(), place, settings: Vec::new() });
                continue;
            }
            if self.sections.is_empty() {
                return Err(refused(
                    &place,
                    "",
                    content,
                    "an option before the first [section]: put it under [global]",
                ));
            }
            if let Some(target) = include_target(content) {
                if depth >= INCLUDE_DEPTH_MAX {
                    return Err(refused(
                        &place,
                        "include",
                        target,
                        &format!("includes nest deeper than {INCLUDE_DEPTH_MAX} (does a file include itself?)"),
                    ));
                }
                let target = path.parent().unwrap_or_else(|| Path::new("")).join(target);
                self.read(&target, depth + 1, true)?;
                continue;
            }
            let (key, value) = match content.split_once('=') {
                Some((key, value)) => (key.trim(), Some(expand(value.trim(), self.env, &place, key.trim())?)),
                None => (content, None),
            };
            let section = self.sections.last_mut().ok_or_else(|| refused(&place, "", content, "no section"))?;
            section.settings.push(Setting { key: key.to_owned(), value, place });
        }
        Ok(())
    }

    /// The file's text, refused when it is too large (alone or with the
    /// files read before it) or not UTF-8.
    fn read_bounded(&mut self, path: &Path) -> Result<String, String> {
        let limit = FILE_BYTES_MAX.min(self.budget);
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
            .map_err(|error| error.to_string())?;
        let length = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if length > limit {
            return Err(format!(
                "larger than {limit} bytes (a job file is at most {FILE_BYTES_MAX} bytes, with its includes \
                 {TOTAL_BYTES_MAX})"
            ));
        }
        self.budget -= length;
        String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
    }
}

/// `include FILE` → `FILE`.
fn include_target(content: &str) -> Option<&str> {
    let rest = content.strip_prefix("include")?;
    rest.starts_with(char::is_whitespace).then(|| rest.trim())
}

/// `value` with `${VAR}` replaced from `env`. fio's host keywords
/// (`$pagesize`, `$mb_memory`, `$ncpus`) are refused: a run is reproducible
/// from its files, not from the machine it ran on.
fn expand(value: &str, env: &dyn Fn(&str) -> Option<String>, place: &Place, key: &str) -> Result<String, FioError> {
    let mut expanded = String::new();
    let mut rest = value;
    while let Some(dollar) = rest.find('$') {
        expanded.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(|| refused(place, key, value, "`${` without its closing `}`"))?;
            expanded.push_str(&env(&braced[..end]).unwrap_or_default());
            rest = &braced[end + 1..];
        } else if let Some(keyword) =
            ["pagesize", "mb_memory", "ncpus"].into_iter().find(|word| after.starts_with(word))
        {
            return Err(refused(
                place,
                key,
                value,
                &format!(
                    "`${keyword}` is a property of the host fio runs on; a nandlab run is reproducible from \
                     its files alone: write the number"
                ),
            ));
        } else {
            expanded.push('$');
            rest = after;
        }
    }
    expanded.push_str(rest);
    Ok(expanded)
}

fn refused(place: &Place, option: &str, value: &str, reason: &str) -> FioError {
    FioError::Refused {
        place: place.clone(),
        option: option.to_owned(),
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The device the jobs run on, as the mapping needs it.
#[derive(Clone, Copy, Debug)]
struct Device {
    page_bytes: u64,
    pages: u64,
}

impl Device {
    fn bytes(self) -> u64 {
        self.pages * self.page_bytes
    }
}

impl JobFile {
    /// The jobs over `geometry`: each job section (globals above it applied)
    /// `numjobs` times. Warnings of a `[global]` option come once.
    pub fn map(&self, geometry: &Geometry) -> Result<MappedJobs, FioError> {
        let device = Device { page_bytes: u64::from(geometry.page_size), pages: u64::from(geometry.logical_pages) };
        let mut warnings = Warnings::default();
        let mut jobs = Vec::new();
        let mut seed: Option<(u64, Place)> = None;
        let mut names = BTreeSet::new();
        let mut globals: Vec<&Setting> = Vec::new();
        for section in &self.sections {
            if section.name == "global" {
                globals.extend(&section.settings);
                continue;
            }
            let job = Job {
                name: &section.name,
                place: &section.place,
                first: jobs.is_empty(),
                settings: globals.iter().copied().chain(&section.settings).collect(),
                read: RefCell::default(),
            };
            let mapped = job.map(device, &mut warnings)?;
            if let Some((job_seed, place)) = &mapped.seed {
                match &seed {
                    Some((first, first_place)) if first != job_seed => {
                        return Err(refused(
                            place,
                            "randseed",
                            &job_seed.to_string(),
                            &format!(
                                "the jobs ask for different seeds ({first} at {first_place}); a nandlab run has \
                                 one seed, from which each job draws its own stream: give randseed once, under \
                                 [global]"
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => seed = Some((*job_seed, place.clone())),
                }
            }
            job.warn_unread(&mut warnings);
            for mut table in mapped.clones {
                let name = unique_name(&mut names, table_name(&table), &section.place);
                table.insert("name".to_owned(), toml::Value::String(name));
                jobs.push(table);
            }
            if jobs.len() > JOBS_MAX {
                return Err(refused(
                    &section.place,
                    "numjobs",
                    &jobs.len().to_string(),
                    &format!("the file asks for {} jobs or more; a run has at most {JOBS_MAX}", jobs.len()),
                ));
            }
        }
        if jobs.is_empty() {
            return Err(FioError::Read {
                file: self.file.clone(),
                reason: "no job section (only [global]): add a [NAME] section per job".to_owned(),
            });
        }
        Ok(MappedJobs { jobs, seed: seed.map(|(seed, _)| seed), warnings: warnings.list })
    }
}

fn table_name(table: &toml::Table) -> String {
    table.get("name").and_then(toml::Value::as_str).unwrap_or_default().to_owned()
}

/// `name`, or, when an earlier job has it (fio allows two sections of one
/// name), `name@LINE`.
fn unique_name(names: &mut BTreeSet<String>, name: String, place: &Place) -> String {
    let name = if names.contains(&name) { format!("{name}@{}", place.line) } else { name };
    names.insert(name.clone());
    name
}

/// Warnings, each (place, option) once.
#[derive(Default)]
struct Warnings {
    seen: BTreeSet<(Place, String)>,
    list: Vec<FioWarning>,
}

impl Warnings {
    fn add(&mut self, setting: &Setting, reason: impl Into<String>) {
        if self.seen.insert((setting.place.clone(), setting.key.clone())) {
            self.list.push(FioWarning {
                place: setting.place.clone(),
                option: setting.key.clone(),
                reason: reason.into(),
            });
        }
    }
}

/// One job section with the globals above it; later settings win.
struct Job<'a> {
    name: &'a str,
    place: &'a Place,
    /// No job section comes before it (a `stonewall` here waits for nothing).
    first: bool,
    settings: Vec<&'a Setting>,
    /// The options the mapping asked for; the others are warned about.
    read: RefCell<BTreeSet<&'static str>>,
}

/// What one section maps to.
struct MappedJob {
    clones: Vec<toml::Table>,
    seed: Option<(u64, Place)>,
}

/// Shares of a job's requests by direction (read, write, trim), summing to 1.
#[derive(Clone, Copy, Debug)]
struct Mix {
    read: f64,
    write: f64,
    trim: f64,
}

impl Mix {
    fn shares(self) -> [f64; 3] {
        [self.read, self.write, self.trim]
    }
}

impl<'a> Job<'a> {
    /// The last setting of any of `names` (aliases), marked as read.
    fn last(&self, names: &[&'static str]) -> Option<&'a Setting> {
        self.read.borrow_mut().extend(names.iter().copied());
        self.settings.iter().rev().find(|setting| names.contains(&setting.key.as_str())).copied()
    }

    fn map(&self, device: Device, warnings: &mut Warnings) -> Result<MappedJob, FioError> {
        let kb_base = self.kb_base()?;
        self.refuse_engine(warnings)?;
        self.refuse_what_has_no_counterpart()?;
        let (pattern, mix) = self.pattern_and_mix(warnings)?;
        let request_bytes = self.request_bytes(mix, kb_base)?;
        let request_pages = self.request_pages(request_bytes, device)?;
        let numjobs = self.count(&["numjobs"], 1)?;
        if usize::try_from(numjobs).map_or(true, |count| count > JOBS_MAX) {
            return Err(self.refuse_value(&["numjobs"], &format!("more than {JOBS_MAX} jobs; a run has at most that")));
        }
        let mut table = toml::Table::new();
        table.insert("pattern".to_owned(), toml::Value::String(pattern.to_owned()));
        table.insert("read_fraction".to_owned(), toml::Value::Float(mix.read));
        table.insert("trim_fraction".to_owned(), toml::Value::Float(mix.trim));
        table.insert("request_pages".to_owned(), integer(request_pages));
        table.insert("queue_depth".to_owned(), integer(self.queue_depth(warnings)?));
        if pattern == "random" {
            self.distribution(&mut table, warnings)?;
        }
        let rate = self.rate(mix, request_bytes, kb_base, warnings)?;
        if let Some(rate) = rate {
            table.insert("rate_iops".to_owned(), integer(rate));
        }
        self.note_modes(warnings);
        let seed = self.seed(warnings)?;
        let mut clones = Vec::new();
        for clone in 0..numjobs {
            let mut clone_table = table.clone();
            let (first_page, end_page, amount) = self.region(device, clone, kb_base)?;
            if end_page - first_page < request_pages {
                return Err(self.refuse_value(
                    &["size", "filesize"],
                    &format!(
                        "the job's region holds {} pages, less than one request of {request_pages} pages: \
                         raise size or lower bs",
                        end_page - first_page
                    ),
                ));
            }
            clone_table.insert("range_start".to_owned(), toml::Value::Float(fraction(first_page, device)));
            clone_table.insert("range_end".to_owned(), toml::Value::Float(fraction(end_page, device)));
            let requests = self.requests(amount, request_bytes, rate)?;
            clone_table.insert("requests".to_owned(), integer(requests));
            let name = if numjobs == 1 { self.name.to_owned() } else { format!("{}.{clone}", self.name) };
            clone_table.insert("name".to_owned(), toml::Value::String(name));
            clones.push(clone_table);
        }
        Ok(MappedJob { clones, seed })
    }

    /// An error about the last of `names`' settings (its value, its line).
    fn refuse_value(&self, names: &[&'static str], reason: &str) -> FioError {
        match self.last(names) {
            Some(setting) => refused(&setting.place, &setting.key, setting.value.as_deref().unwrap_or(""), reason),
            None => refused(self.place, "", "", &format!("job [{}]: {reason}", self.name)),
        }
    }

    fn kb_base(&self) -> Result<u64, FioError> {
        match self.last(&["kb_base"]) {
            None => Ok(1024),
            Some(setting) => match setting.value.as_deref() {
                Some("1024") => Ok(1024),
                Some("1000") => Ok(1000),
                _ => Err(self.refuse_value(&["kb_base"], "fio's kb_base is 1024 or 1000")),
            },
        }
    }

    /// Engines that do no block I/O have nothing to simulate; the others
    /// only decide whether `iodepth` applies ([`Self::queue_depth`]).
    fn refuse_engine(&self, warnings: &mut Warnings) -> Result<(), FioError> {
        let Some(setting) = self.last(&["ioengine"]) else {
            return Ok(());
        };
        let engine = setting.value.as_deref().unwrap_or("");
        if NO_BLOCK_IO_ENGINES.contains(&engine) || engine.starts_with("librpma") {
            return Err(self.refuse_value(
                &["ioengine"],
                "this engine does no block reads or writes, so nandlab has nothing to simulate: \
                 run the file's block I/O jobs alone",
            ));
        }
        warnings.add(
            setting,
            "device-only: nandlab simulates the device; the engine only decides whether iodepth applies \
             (synchronous engines keep one request outstanding)",
        );
        Ok(())
    }

    /// Options that change what reaches the device in ways a job cannot say.
    fn refuse_what_has_no_counterpart(&self) -> Result<(), FioError> {
        for (names, reason) in REFUSED_WHEN_ON {
            if let Some(setting) = self.last(names) {
                if is_on(setting.value.as_deref()) && !(self.first && names.contains(&"stonewall")) {
                    return Err(self.refuse_value(names, reason));
                }
            }
        }
        if let Some(setting) = self.last(&["nrfiles", "nr_files"]) {
            if self.count(&["nrfiles", "nr_files"], 1)? > 1 {
                return Err(refused(
                    &setting.place,
                    &setting.key,
                    setting.value.as_deref().unwrap_or(""),
                    "nandlab's job works on one device region, not on several files: use nrfiles=1 \
                     (or one job per file, each with its offset and size)",
                ));
            }
        }
        if let Some(setting) = self.last(&["percentage_random"]) {
            if setting.value.as_deref().map(str::trim) != Some("100") {
                return Err(self.refuse_value(
                    &["percentage_random"],
                    "a job is all random or all sequential in nandlab: use 100 (rw=rand…) or 0 (rw=read/write)",
                ));
            }
        }
        Ok(())
    }

    /// `rw` (default `read`) with `rwmixread`/`rwmixwrite`.
    fn pattern_and_mix(&self, warnings: &mut Warnings) -> Result<(&'static str, Mix), FioError> {
        let names = ["rw", "readwrite"];
        let value = self.last(&names).and_then(|setting| setting.value.clone()).unwrap_or_else(|| "read".to_owned());
        let (mode, modifier) = value.split_once(':').map_or((value.as_str(), None), |(mode, m)| (mode, Some(m)));
        let read_share = self.read_percent()? as f64 / 100.0;
        let mixed = Mix { read: read_share, write: 1.0 - read_share, trim: 0.0 };
        let only = |direction: usize| {
            let mut shares = [0.0; 3];
            shares[direction] = 1.0;
            Mix { read: shares[0], write: shares[1], trim: shares[2] }
        };
        let (pattern, mix) = match mode.trim() {
            "read" => ("sequential", only(0)),
            "write" => ("sequential", only(1)),
            "trim" => ("sequential", only(2)),
            "randread" => ("random", only(0)),
            "randwrite" => ("random", only(1)),
            "randtrim" => ("random", only(2)),
            "rw" | "readwrite" => ("sequential", mixed),
            "randrw" => ("random", mixed),
            "trimwrite" | "randtrimwrite" => {
                return Err(self.refuse_value(
                    &names,
                    "fio trims each block right before writing it; nandlab's mix draws every request on its own: \
                     use rw=randwrite with a separate rw=randtrim job, or trim_fraction in a TOML [[job]]",
                ))
            }
            _ => {
                return Err(self.refuse_value(
                    &names,
                    "not one of read, write, trim, randread, randwrite, randtrim, rw, readwrite, randrw",
                ))
            }
        };
        if let Some(modifier) = modifier {
            let neutral =
                if pattern == "random" { modifier.trim() == "1" } else { parse_size(modifier, 1024) == Ok(0) };
            if !neutral {
                return Err(self.refuse_value(
                    &names,
                    "a modifier after `:` (sequential holes, backward steps, or several sequential requests per \
                     random offset) has no counterpart in nandlab's pattern: drop it",
                ));
            }
        }
        if mix.read < 1.0 && mix.write < 1.0 && mix.trim < 1.0 {
            return Ok((pattern, mix));
        }
        for setting in [self.last(&["rwmixread"]), self.last(&["rwmixwrite"])].into_iter().flatten() {
            warnings.add(setting, format!("no effect with rw={mode}, as in fio (the job does one kind of request)"));
        }
        Ok((pattern, mix))
    }

    /// `rwmixread`, or 100 − `rwmixwrite`: whichever the file sets last.
    fn read_percent(&self) -> Result<u64, FioError> {
        let read = self.last(&["rwmixread"]);
        let write = self.last(&["rwmixwrite"]);
        let later = |a: &Setting, b: &Setting| self.position(a) > self.position(b);
        let (names, invert) = match (read, write) {
            (None, None) => return Ok(DEFAULT_READ_PERCENT),
            (Some(read), Some(write)) if later(write, read) => (["rwmixwrite"], true),
            (Some(_), _) => (["rwmixread"], false),
            (None, Some(_)) => (["rwmixwrite"], true),
        };
        let percent = self.count(&names, 0)?;
        if percent > 100 {
            return Err(self.refuse_value(&names, "a percentage from 0 to 100"));
        }
        Ok(if invert { 100 - percent } else { percent })
    }

    fn position(&self, setting: &Setting) -> usize {
        self.settings.iter().position(|other| std::ptr::eq(*other, setting)).unwrap_or(0)
    }

    /// The one request size of the directions the job issues: `bssplit`,
    /// else `bsrange`, else `bs` (each per direction as fio's `bs` is);
    /// fio's 4096 bytes where none applies.
    fn request_bytes(&self, mix: Mix, kb_base: u64) -> Result<u64, FioError> {
        type Sizes = fn(&str, u64) -> Result<Vec<u64>, String>;
        let options: [(&[&'static str], Sizes); 3] = [
            (&["bssplit"], split_sizes),
            (&["bsrange", "blocksize_range"], range_sizes),
            (&["bs", "blocksize"], |size, kb_base| parse_size(size, kb_base).map(|bytes| vec![bytes])),
        ];
        let given: Vec<_> =
            options.iter().filter_map(|(names, sizes)| Some((*names, self.last(names)?, sizes))).collect();
        let Some((names, setting, sizes)) = given.first() else {
            return Ok(DEFAULT_BLOCK_BYTES);
        };
        let mut used = BTreeSet::new();
        for (part, share) in per_direction(setting.value.as_deref().unwrap_or("")).into_iter().zip(mix.shares()) {
            if share > 0.0 {
                match part {
                    Some(part) => {
                        used.extend(sizes(part, kb_base).map_err(|reason| self.refuse_value(names, &reason))?)
                    }
                    None => {
                        used.insert(DEFAULT_BLOCK_BYTES);
                    }
                }
            }
        }
        match used.into_iter().collect::<Vec<_>>().as_slice() {
            [bytes] => Ok(*bytes),
            [] => Ok(DEFAULT_BLOCK_BYTES),
            _ => Err(self.refuse_value(
                names,
                "a nandlab job has one request size; give each size its own job (with its share of the rate \
                 or size)",
            )),
        }
    }

    /// Pages per request; a request must be whole pages of the device.
    fn request_pages(&self, bytes: u64, device: Device) -> Result<u64, FioError> {
        let names = ["bssplit", "bsrange", "blocksize_range", "bs", "blocksize"];
        if bytes == 0 || !bytes.is_multiple_of(device.page_bytes) {
            return Err(self.refuse_value(
                &names,
                &format!(
                    "requests of {bytes} bytes are not whole pages of the device's {0}-byte pages: use a \
                     multiple of {0} (or a device with smaller pages, --preset)",
                    device.page_bytes
                ),
            ));
        }
        let pages = bytes / device.page_bytes;
        if pages > device.pages {
            return Err(self.refuse_value(&names, &format!("requests of {bytes} bytes exceed the device")));
        }
        Ok(pages)
    }

    fn count(&self, names: &[&'static str], default: u64) -> Result<u64, FioError> {
        match self.last(names) {
            None => Ok(default),
            Some(setting) => parse_size(setting.value.as_deref().unwrap_or("1"), 1024)
                .map_err(|reason| self.refuse_value(names, &reason)),
        }
    }

    /// `iodepth`; 1 under a synchronous engine (fio: "increasing iodepth
    /// beyond 1 will not affect synchronous ioengines"), psync by default.
    fn queue_depth(&self, warnings: &mut Warnings) -> Result<u64, FioError> {
        let depth = self.count(&["iodepth"], 1)?;
        if depth == 0 || depth > u64::from(u32::MAX) {
            return Err(self.refuse_value(&["iodepth"], "a queue depth from 1 to 4294967295"));
        }
        let engine =
            self.settings.iter().rev().find(|setting| setting.key == "ioengine").and_then(|s| s.value.as_deref());
        let synchronous = engine.is_none_or(|engine| SYNCHRONOUS_ENGINES.contains(&engine));
        if depth > 1 && synchronous {
            if let Some(setting) = self.last(&["iodepth"]) {
                warnings.add(
                    setting,
                    format!(
                        "the engine ({}) is synchronous: fio keeps one request outstanding whatever iodepth says, \
                         and so does the job (queue_depth = 1); set ioengine=libaio or io_uring for depth {depth}",
                        engine.unwrap_or("psync, fio's default")
                    ),
                );
            }
            return Ok(1);
        }
        Ok(depth)
    }

    /// `random_distribution`: uniform, zipf:θ, or a two-zone `zoned` as hot/cold.
    fn distribution(&self, table: &mut toml::Table, warnings: &mut Warnings) -> Result<(), FioError> {
        let names = ["random_distribution"];
        let value = self.last(&names).and_then(|setting| setting.value.clone()).unwrap_or_else(|| "random".to_owned());
        let value = value.trim();
        if value == "random" {
            let norandommap = self.last(&["norandommap"]).is_some_and(|setting| is_on(setting.value.as_deref()));
            if !norandommap {
                if let Some(setting) = self.last(&["rw", "readwrite"]) {
                    warnings.add(
                        setting,
                        "fio's random map visits every block once per pass; nandlab draws offsets uniformly with \
                         repeats, as fio does with norandommap",
                    );
                }
            }
            return Ok(());
        }
        if value.contains(',') {
            return Err(self.refuse_value(&names, "one distribution for all directions: drop the `,` parts"));
        }
        let (kind, arguments) = value.split_once(':').unwrap_or((value, ""));
        match kind {
            "zipf" => {
                let mut parts = arguments.split(':');
                let theta: f64 = parts.next().and_then(|theta| theta.trim().parse().ok()).unwrap_or(f64::NAN);
                if !(theta.is_finite() && theta > 0.0) {
                    return Err(self.refuse_value(&names, "zipf needs a positive θ, e.g. zipf:1.2"));
                }
                if parts.next().is_some() {
                    return Err(self.refuse_value(
                        &names,
                        "a zipf centre: nandlab scatters the popular blocks over the range, as fio does without \
                         one: drop the second number",
                    ));
                }
                table.insert("distribution".to_owned(), toml::Value::String("zipf".to_owned()));
                table.insert("zipf_theta".to_owned(), toml::Value::Float(theta));
                Ok(())
            }
            "zoned" => self.zoned(arguments, table),
            _ => Err(self.refuse_value(
                &names,
                "nandlab's address distributions are uniform, zipf and hot/cold (a two-zone `zoned`): \
                 use random, zipf:θ or zoned:A/S:B/T",
            )),
        }
    }

    /// `zoned:A/S:B/T`: A % of the requests to the first S % of the range,
    /// B % to the next T % — nandlab's hot/cold, whose hot region is the
    /// range's first `hot_space_fraction`.
    fn zoned(&self, arguments: &str, table: &mut toml::Table) -> Result<(), FioError> {
        let names = ["random_distribution"];
        let zones: Vec<(f64, Option<f64>)> = arguments
            .split(':')
            .filter(|zone| !zone.trim().is_empty())
            .map(|zone| {
                let (access, space) = zone.split_once('/').unwrap_or((zone, ""));
                let space = space.trim();
                (access.trim().parse().unwrap_or(f64::NAN), if space.is_empty() { None } else { space.parse().ok() })
            })
            .collect();
        let [(hot_access, Some(hot_space)), (cold_access, _)] = zones.as_slice() else {
            return Err(self.refuse_value(
                &names,
                "nandlab's skewed distribution has two zones (hot and cold): write zoned:A/S:(100-A)/(100-S)",
            ));
        };
        let inside = |percent: f64| percent > 0.0 && percent < 100.0;
        if !(inside(*hot_access) && inside(*hot_space) && (hot_access + cold_access - 100.0).abs() < 1e-9) {
            return Err(self.refuse_value(
                &names,
                "the zones' access shares must add up to 100 and each zone must take some of the space and \
                 some of the requests",
            ));
        }
        table.insert("distribution".to_owned(), toml::Value::String("hot-cold".to_owned()));
        table.insert("hot_write_fraction".to_owned(), toml::Value::Float(hot_access / 100.0));
        table.insert("hot_space_fraction".to_owned(), toml::Value::Float(hot_space / 100.0));
        Ok(())
    }

    /// The job's rate in requests per second: `rate_iops`, else `rate` (bytes
    /// per second) over the request size. A value per direction caps that
    /// direction; the mix holds, so the total is the tightest cap over its
    /// direction's share (docs/fio.md).
    fn rate(
        &self,
        mix: Mix,
        request_bytes: u64,
        kb_base: u64,
        warnings: &mut Warnings,
    ) -> Result<Option<u64>, FioError> {
        let (names, per_request): (&[&'static str], u64) = if self.last(&["rate_iops"]).is_some() {
            (&["rate_iops"], 1)
        } else if self.last(&["rate"]).is_some() {
            (&["rate"], request_bytes)
        } else {
            return Ok(None);
        };
        let value = self.last(names).and_then(|setting| setting.value.clone()).unwrap_or_default();
        let mut total = f64::INFINITY;
        for (part, share) in per_direction(&value).into_iter().zip(mix.shares()) {
            let Some(part) = part else { continue };
            let cap = parse_size(part, kb_base).map_err(|reason| self.refuse_value(names, &reason))?;
            if cap > 0 && share > 0.0 {
                let over_share = f64_of(cap) / f64_of(per_request) / share;
                total = total.min(over_share);
            }
        }
        if total.is_infinite() {
            return Ok(None);
        }
        if total < 1.0 {
            return Err(self.refuse_value(
                names,
                &format!(
                    "less than one request of {request_bytes} bytes a second; nandlab's rates are whole requests \
                     per second: raise it"
                ),
            ));
        }
        let process = self.last(&["rate_process"]);
        if process.and_then(|setting| setting.value.as_deref()) != Some("poisson") {
            if let Some(setting) = self.last(names) {
                warnings.add(
                    setting,
                    "nandlab's rate jobs arrive as a Poisson stream at this mean rate (fio's rate_process=poisson); \
                     fio's default spaces them evenly",
                );
            }
        }
        let rate = saturating::<u64>(total.round());
        Ok(Some(rate))
    }

    /// The clone's region, `[first_page, end_page)`, and the bytes it moves
    /// (`io_size`, else `size`, else the region; times `loops`).
    fn region(&self, device: Device, clone: u64, kb_base: u64) -> Result<(u64, u64, u64), FioError> {
        let capacity = device.bytes();
        let offset = self.bytes_or_percent(&["offset"], kb_base, capacity)?.unwrap_or(0);
        let increment = self.bytes_or_percent(&["offset_increment"], kb_base, capacity)?.unwrap_or(0);
        let offset = increment
            .checked_mul(clone)
            .and_then(|step| step.checked_add(offset))
            .filter(|offset| *offset < capacity)
            .ok_or_else(|| {
                self.refuse_value(
                    &["offset_increment", "offset"],
                    &format!("the job (clone {clone}) starts beyond the device's {capacity} bytes"),
                )
            })?;
        if !offset.is_multiple_of(device.page_bytes) {
            return Err(self.refuse_value(
                &["offset", "offset_increment"],
                &format!("not a multiple of the device's {}-byte pages", device.page_bytes),
            ));
        }
        let fill = self.last(&["fill_device", "fill_fs"]).is_some_and(|setting| is_on(setting.value.as_deref()));
        let size = if fill { None } else { self.bytes_or_percent(&["size"], kb_base, capacity)? };
        let file_size = self.bytes_or_percent(&["filesize"], kb_base, capacity)?;
        let length = file_size.or(size).unwrap_or(capacity - offset);
        let end = offset.checked_add(length).filter(|end| *end <= capacity).ok_or_else(|| {
            self.refuse_value(
                &["filesize", "size", "offset"],
                &format!(
                    "offset + size pass the end of the device ({capacity} bytes of logical space): use a \
                     percentage (size=50%), a smaller size, or a larger device (--preset, or --set \
                     device.capacity=…)"
                ),
            )
        })?;
        let io_size = self.bytes_or_percent(&["io_size", "io_limit"], kb_base, capacity)?;
        let loops = self.count(&["loops"], 1)?.max(1);
        let amount = io_size
            .or(size)
            .unwrap_or(length)
            .checked_mul(loops)
            .ok_or_else(|| self.refuse_value(&["loops"], "the bytes to move overflow 64 bits"))?;
        Ok((offset / device.page_bytes, end / device.page_bytes, amount))
    }

    /// Bytes, or a percentage of `whole` (`50%`).
    fn bytes_or_percent(&self, names: &[&'static str], kb_base: u64, whole: u64) -> Result<Option<u64>, FioError> {
        let Some(setting) = self.last(names) else {
            return Ok(None);
        };
        let value = setting.value.as_deref().unwrap_or("").trim();
        if let Some(percent) = value.strip_suffix('%') {
            let percent: f64 = percent.trim().parse().unwrap_or(f64::NAN);
            if !(percent > 0.0 && percent <= 100.0) {
                return Err(self.refuse_value(names, "a percentage from 1 to 100"));
            }
            let bytes = saturating::<u64>(f64_of(whole) * percent / 100.0);
            return Ok(Some(bytes));
        }
        parse_size(value, kb_base).map(Some).map_err(|reason| self.refuse_value(names, &reason))
    }

    /// Requests the clone issues: `amount` in whole requests, capped by
    /// `number_ios` and, with a rate, by `runtime`; `time_based` runs for
    /// `runtime` at the rate.
    fn requests(&self, amount: u64, request_bytes: u64, rate: Option<u64>) -> Result<u64, FioError> {
        let mut requests = amount / request_bytes;
        let runtime_names = ["runtime", "timeout"];
        let runtime_us = match self.last(&runtime_names) {
            Some(setting) => Some(
                parse_time_us(setting.value.as_deref().unwrap_or(""))
                    .map_err(|reason| self.refuse_value(&runtime_names, &reason))?,
            ),
            None => None,
        };
        let in_runtime =
            |rate: u64, runtime_us: u64| u64::try_from(u128::from(rate) * u128::from(runtime_us) / 1_000_000);
        let time_based = self.last(&["time_based"]).is_some_and(|setting| is_on(setting.value.as_deref()));
        if time_based {
            let (Some(rate), Some(runtime_us)) = (rate, runtime_us.filter(|us| *us > 0)) else {
                return Err(self.refuse_value(
                    &["time_based"],
                    "runs for a time; nandlab's jobs run a number of requests, which a time gives only at a \
                     rate: set rate_iops (and runtime), or drop time_based to move `size` once",
                ));
            };
            requests = in_runtime(rate, runtime_us).unwrap_or(u64::MAX);
        } else if let (Some(rate), Some(runtime_us)) = (rate, runtime_us.filter(|us| *us > 0)) {
            requests = requests.min(in_runtime(rate, runtime_us).unwrap_or(u64::MAX));
        }
        if let Some(number) = self.last(&["number_ios"]).map(|_| self.count(&["number_ios"], 0)).transpose()? {
            if number > 0 {
                requests = requests.min(number);
            }
        }
        if requests == 0 {
            return Err(self.refuse_value(
                &["size", "io_size", "io_limit", "number_ios", "runtime"],
                &format!("the job moves less than one request of {request_bytes} bytes: raise it"),
            ));
        }
        Ok(requests)
    }

    /// Options read but applied differently, warned about as such.
    fn note_modes(&self, warnings: &mut Warnings) {
        let time_based = self.last(&["time_based"]).is_some_and(|setting| is_on(setting.value.as_deref()));
        let rated = self.last(&["rate_iops"]).is_some() || self.last(&["rate"]).is_some();
        if let Some(setting) = self.last(&["runtime", "timeout"]) {
            if !time_based && !rated {
                warnings.add(
                    setting,
                    "caps fio's run time; a closed-loop nandlab job has no time limit and moves its whole size",
                );
            }
        }
        for (names, reason) in NOTED_WHEN_ON {
            if let Some(setting) = self.last(names) {
                if is_on(setting.value.as_deref()) {
                    warnings.add(setting, reason);
                }
            }
        }
        let buffered = self.last(&["direct"]).is_some_and(|setting| !is_on(setting.value.as_deref()))
            || self.last(&["buffered"]).is_some_and(|setting| is_on(setting.value.as_deref()));
        if buffered {
            for setting in [self.last(&["direct"]), self.last(&["buffered"])].into_iter().flatten() {
                warnings.add(
                    setting,
                    "buffered I/O goes through the page cache in fio; nandlab sends every request to the device, \
                     as direct=1 does",
                );
            }
        }
    }

    /// `randseed` (the run's seed); `randrepeat=0` cannot un-repeat a run.
    fn seed(&self, warnings: &mut Warnings) -> Result<Option<(u64, Place)>, FioError> {
        if let Some(setting) = self.last(&["randrepeat", "allrandrepeat"]) {
            if !is_on(setting.value.as_deref()) {
                warnings.add(setting, "a nandlab run is always reproducible from its configuration and seed");
            }
        }
        let Some(setting) = self.last(&["randseed"]) else {
            return Ok(None);
        };
        let seed = parse_size(setting.value.as_deref().unwrap_or(""), 1024)
            .ok()
            .filter(|seed| i64::try_from(*seed).is_ok())
            .ok_or_else(|| self.refuse_value(&["randseed"], "a seed from 0 to 2^63 − 1"))?;
        Ok(Some((seed, setting.place.clone())))
    }

    /// Every setting the mapping did not ask for, warned about with its reason.
    fn warn_unread(&self, warnings: &mut Warnings) {
        let read = self.read.borrow();
        for setting in &self.settings {
            if !read.contains(setting.key.as_str()) {
                warnings.add(setting, unread_reason(&setting.key));
            }
        }
    }
}

/// Why an option the mapping does not read has no effect.
fn unread_reason(key: &str) -> &'static str {
    for (keys, prefixes, reason) in UNREAD_REASONS {
        if keys.contains(&key) || prefixes.iter().any(|prefix| key.starts_with(prefix)) {
            return reason;
        }
    }
    "not an option nandlab reads (unknown to it or without a counterpart): not applied"
}

/// Options that do not change the requests the device sees.
const UNREAD_REASONS: [(&[&str], &[&str], &str); 4] = [
    (
        &[
            "filename",
            "directory",
            "filename_format",
            "unique_filename",
            "opendir",
            "lockfile",
            "create_on_open",
            "create_serialize",
            "create_fsync",
            "allow_file_create",
            "allow_mounted_write",
            "unlink",
            "unlink_each_loop",
            "fallocate",
            "invalidate",
            "file_service_type",
            "openfiles",
            "thread",
            "threads",
            "mem",
            "iomem",
            "iomem_align",
            "hugepage-size",
            "lockmem",
            "gtod_reduce",
            "gtod_cpu",
            "clocksource",
            "exitall",
            "exit_what",
            "exitall_on_error",
            "continue_on_error",
            "ignore_error",
            "error_dump",
            "io_submit_mode",
            "sqthread_poll",
            "sqthread_poll_cpu",
            "registerfiles",
            "fixedbufs",
            "hipri",
            "nonvectored",
            "cmd_type",
            "offset_align",
            "blockalign",
            "ba",
            "sync",
            "dsync",
            "odirect",
            "overwrite",
            "uri",
            "hostname",
            "port",
            "nice",
            "prio",
            "prioclass",
            "skip_bad",
            "busy_poll",
        ],
        &["cpus_allowed", "cpumask", "numa_", "iodepth_", "http_", "xnvme_", "gpu_", "cuda_"],
        "device-only (where and how the host runs fio): nandlab's simulated device stands in for it",
    ),
    (
        &[
            "name",
            "description",
            "group_reporting",
            "new_group",
            "stats",
            "per_job_logs",
            "significant_figures",
            "percentile_list",
            "unified_rw_reporting",
            "steadystate",
            "ss",
            "ss_dur",
            "ss_ramp",
            "ratemin",
            "rate_min",
            "rate_iops_min",
            "ratecycle",
            "rate_cycle",
            "max_latency",
            "latency_percentile",
            "latency_window",
        ],
        &["write_", "log_", "disable_", "clat_", "lat_", "slat_", "bwavgtime", "iopsavgtime"],
        "reporting only: nandlab reports every job under its section name",
    ),
    (
        &[
            "do_verify",
            "dedupe_mode",
            "dedupe_global",
            "scramble_buffers",
            "zero_buffers",
            "refill_buffers",
            "buffer_pattern",
            "trim_percentage",
            "trim_verify_zero",
            "trim_backlog",
        ],
        &["verify", "buffer_compress", "dedupe_", "compress_"],
        "data content: nandlab stores no data, so the device's work does not depend on it \
         (fio's verify reads after a write phase are not issued)",
    ),
    (
        &[
            "random_generator",
            "norandommap",
            "softrandommap",
            "randrepeat",
            "allrandrepeat",
            "kb_base",
            "rate_process",
            "io_submit_mode",
        ],
        &[],
        "read with the options it modifies; no effect on its own here",
    ),
];

/// Engines with no block I/O to simulate.
const NO_BLOCK_IO_ENGINES: [&str; 17] = [
    "cpuio",
    "exec",
    "net",
    "netsplice",
    "http",
    "rdma",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "e4defrag",
    "falloc",
    "ftruncate",
    "mtd",
    "libhdfs",
];

/// Engines that keep one request outstanding (fio's iodepth note); `psync` is fio's default on Linux.
const SYNCHRONOUS_ENGINES: [&str; 7] = ["sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice"];

/// Options refused when set (to a non-zero value): they change which
/// requests reach the device, or when, in ways a job cannot say.
const REFUSED_WHEN_ON: [(&[&str], &str); 13] = [
    (&["stonewall", "wait_for_previous"], "fio starts the jobs after it once those before have ended; nandlab's jobs all run at once: run each group as its own file"),
    (&["wait_for"], "fio starts this job once another has ended; nandlab's jobs all run at once: run it from its own file"),
    (&["startdelay"], "nandlab's jobs all start at time 0: drop it"),
    (&["thinktime"], "a pause between requests: nandlab's closed-loop job issues its next request at once (use rate_iops for a slower job)"),
    (&["flow"], "fio's flow control ties jobs' progress together; nandlab's jobs are independent"),
    (&["fsync", "fdatasync"], "nandlab's synthetic jobs issue no flushes: drop it, or capture a real workload and replay it (nandlab capture / replay)"),
    (&["write_barrier", "sync_file_range"], "nandlab's synthetic jobs issue no flushes or barriers: drop it"),
    (&["zonemode", "zonesize", "zonerange", "zoneskip"], "zoned I/O (strided zones or a zoned device) has no counterpart in nandlab's jobs: give each zone its own job with offset and size"),
    (&["latency_target"], "fio searches for the queue depth that meets a latency target; give nandlab the depth (iodepth) instead"),
    (&["cmdprio_percentage", "cmdprio_bssplit", "cmdprio", "cmdprio_class"], "a share of a job's requests at another priority: nandlab's priority is per job (a TOML [[job]] with priority = true)"),
    (&["file_append"], "nandlab's device has no file end to append at: use offset"),
    (&["verify_only"], "fio only reads back what an earlier run wrote: use rw=read"),
    (&["pre_read"], "nandlab has no page cache to pre-read into: drop it"),
];

/// Options applied differently from fio, warned about when set.
const NOTED_WHEN_ON: [(&[&str], &str); 3] = [
    (&["ramp_time"], "nandlab measures after its own aging ([precondition]), not after a warm-up time"),
    (&["end_fsync", "fsync_on_close"], "nandlab's synthetic jobs issue no flush at their end"),
    (
        &["fill_device", "fill_fs"],
        "the job fills the device from its offset (to the device's end), as fio does on a raw device",
    ),
];

/// fio's boolean: a bare option, or any number other than 0.
fn is_on(value: Option<&str>) -> bool {
    match value.map(str::trim) {
        None | Some("") => true,
        Some(text) => !matches!(text, "0" | "false" | "off" | "no" | "none"),
    }
}

/// fio's per-direction lists (`bs`, `rate`, …): `A` for all three, `A,B`
/// reads A and writes and trims B, an empty part or a trailing comma
/// leaving a direction unset.
fn per_direction(value: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let last = parts.last().copied().filter(|part| !part.is_empty());
    std::array::from_fn(|direction| match parts.get(direction) {
        Some(part) if !part.is_empty() => Some(*part),
        Some(_) => None,
        None => last,
    })
}

/// `bssplit`'s `SIZE/PERCENT:SIZE/PERCENT` sizes (those with a share).
fn split_sizes(list: &str, kb_base: u64) -> Result<Vec<u64>, String> {
    let mut sizes = Vec::new();
    for entry in list.split(':').map(str::trim).filter(|entry| !entry.is_empty()) {
        let (size, percent) = entry.split_once('/').unwrap_or((entry, "100"));
        if percent.trim() != "0" {
            sizes.push(parse_size(size, kb_base)?);
        }
    }
    Ok(sizes)
}

/// `bsrange`'s `LOW-HIGH` (or `LOW:HIGH`) bounds.
fn range_sizes(range: &str, kb_base: u64) -> Result<Vec<u64>, String> {
    let (low, high) = range.split_once(['-', ':']).unwrap_or((range, range));
    let mut sizes = vec![parse_size(low, kb_base)?, parse_size(high, kb_base)?];
    sizes.dedup();
    Ok(sizes)
}

/// A page boundary as a `range_start`/`range_end` fraction: half a page
/// past the boundary (the job floors fraction × pages), or exactly 1 at the end.
fn fraction(page: u64, device: Device) -> f64 {
    if page >= device.pages {
        return 1.0;
    }
    (f64_of(page) + 0.5) / f64_of(device.pages)
}

fn integer(value: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(value).unwrap_or(i64::MAX))
}

/// A size as fio writes it: decimal or `0x` hex, then a unit whose case
/// does not matter — `k` `m` `g` `t` `p` (with an optional `b`) are powers of
/// 1024 and `ki` `mi` … (`kib` …) powers of 1000 under `kb_base=1024` (fio's
/// compatibility default), the other way round under `kb_base=1000`. The
/// multiplication is the shared byte-size parser's ([`nandlab_quote::parse_byte_size`]).
fn parse_size(text: &str, kb_base: u64) -> Result<u64, String> {
    let text = text.trim();
    if text.starts_with('(') {
        return Err("fio's arithmetic expressions are not read (Debian's fio does not read them either): \
                    write the number"
            .to_owned());
    }
    let (number, unit) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => {
            let end = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
            let value = u64::from_str_radix(&hex[..end], 16).map_err(|_| format!("{text:?} is not a number"))?;
            (value, &hex[end..])
        }
        None => {
            let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
            let value = text[..end].parse::<u64>().map_err(|_| format!("{text:?} is not a whole number of bytes"))?;
            (value, &text[end..])
        }
    };
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let (power, iec) = match unit.strip_suffix('i') {
        Some(prefix) => (prefix, true),
        None => (unit, false),
    };
    let exponent = match power {
        "" if !iec => return Ok(number),
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return Err(format!("{text:?}: unknown unit (fio's are k, m, g, t, p, with i or b)")),
    };
    let binary = (kb_base == 1024) != iec;
    // The shared parser knows K … T; a peta is a thousand (or 1024) tera.
    let (number, exponent) = if exponent == 5 {
        (number.checked_mul(if binary { 1024 } else { 1000 }).ok_or("size overflows 64 bits")?, 4)
    } else {
        (number, exponent)
    };
    let suffix = ["K", "M", "G", "T"][exponent - 1];
    let unit = if binary { format!("{suffix}iB") } else { format!("{suffix}B") };
    nandlab_quote::parse_byte_size(&format!("{number}{unit}")).map_err(|reason| format!("{text:?}: {reason}"))
}

/// A time as fio writes it, in microseconds: seconds by default, or `d`,
/// `h`, `m`, `s`, `ms`/`msec`, `us`/`usec`.
fn parse_time_us(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let number: u64 = text[..end].parse().map_err(|_| format!("{text:?} is not a whole number of seconds"))?;
    let unit_us: u64 = match text[end..].trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => 1_000_000,
        "ms" | "msec" => 1_000,
        "us" | "usec" => 1,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(format!("{text:?}: unknown time unit (d, h, m, s, ms, us)")),
    };
    number.checked_mul(unit_us).ok_or_else(|| format!("{text:?} is too long a time"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// A folder of job files for one test, removed at its end.
    struct Folder(std::path::PathBuf);

    impl Folder {
        fn new(name: &str) -> Self {
            let path = std::env::temp_dir().join(format!("nandlab-fio-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        fn file(&self, name: &str, text: &str) -> std::path::PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, text).unwrap();
            path
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    /// The `small` preset: 13,107 logical pages of 4 KiB.
    fn small() -> Geometry {
        config::preset_config("small").unwrap().1
    }

    fn map_text(name: &str, text: &str) -> Result<MappedJobs, FioError> {
        let folder = Folder::new(name);
        let path = folder.file("job.fio", text);
        read_job_file(&path, &no_env)?.map(&small())
    }

    fn key<'a>(job: &'a toml::Table, key: &str) -> &'a toml::Value {
        job.get(key).unwrap_or_else(|| panic!("{key} in {job:?}"))
    }

    fn int(job: &toml::Table, name: &str) -> i64 {
        key(job, name).as_integer().unwrap()
    }

    fn float(job: &toml::Table, name: &str) -> f64 {
        key(job, name).as_float().unwrap()
    }

    fn refusal(result: Result<MappedJobs, FioError>) -> String {
        let error = result.expect_err("refused");
        assert!(matches!(error, FioError::Refused { .. }), "{error:?}");
        error.to_string()
    }

    #[test]
    fn sizes_follow_fios_units_and_kb_base() {
        for (text, bytes) in [("4096", 4096), ("4k", 4096), ("4K", 4096), ("4kb", 4096), ("4KB", 4096), ("1m", 1 << 20)]
        {
            assert_eq!(parse_size(text, 1024), Ok(bytes), "{text}");
        }
        assert_eq!(parse_size("1g", 1024), Ok(1 << 30));
        assert_eq!(parse_size("0x1000", 1024), Ok(4096));
        assert_eq!(parse_size("4ki", 1024), Ok(4000), "compatibility mode: ki is a power of 1000");
        assert_eq!(parse_size("4KiB", 1024), Ok(4000));
        assert_eq!(parse_size("4k", 1000), Ok(4000));
        assert_eq!(parse_size("4KiB", 1000), Ok(4096));
        assert_eq!(parse_size("1p", 1024), Ok(1 << 50));
        assert!(parse_size("(1k*4)", 1024).unwrap_err().contains("arithmetic"));
        assert!(parse_size("4q", 1024).unwrap_err().contains("unknown unit"));
        assert!(parse_size("99999999999999999999", 1024).is_err());
        assert!(parse_size("16777216t", 1024).unwrap_err().contains("overflow"));
        assert_eq!(parse_time_us("900"), Ok(900_000_000));
        assert_eq!(parse_time_us("5m"), Ok(300_000_000));
        assert_eq!(parse_time_us("10ms"), Ok(10_000));
    }

    #[test]
    fn per_direction_values_read_as_fios_bs() {
        assert_eq!(per_direction("4k"), [Some("4k"), Some("4k"), Some("4k")]);
        assert_eq!(per_direction("4k,8k"), [Some("4k"), Some("8k"), Some("8k")]);
        assert_eq!(per_direction(",8k"), [None, Some("8k"), Some("8k")]);
        assert_eq!(per_direction("4k,"), [Some("4k"), None, None]);
        assert_eq!(per_direction("4k,,16k"), [Some("4k"), None, Some("16k")]);
    }

    #[test]
    fn globals_comments_includes_and_environment_are_read_as_fio_does() {
        let folder = Folder::new("read");
        folder.file("depth.fio", "iodepth=8 ; from the include\n");
        let path = folder.file(
            "job.fio",
            "; a comment\n[global]\nbs=8k # trailing\nioengine=libaio\nsize=${SIZE}\n\n  [first]  \nrw=randwrite\n\
             include depth.fio\n[global]\nbs=16k\n[second]\nrw=read\n",
        );
        let env = |name: &str| (name == "SIZE").then(|| "4m".to_owned());
        let mapped = read_job_file(&path, &env).unwrap().map(&small()).unwrap();
        let [first, second] = mapped.jobs.as_slice() else { panic!("{:?}", mapped.jobs) };
        assert_eq!(key(first, "name").as_str(), Some("first"));
        assert_eq!(int(first, "request_pages"), 2, "bs=8k of the global above it");
        assert_eq!(int(first, "queue_depth"), 8, "iodepth from the include");
        assert_eq!(int(first, "requests"), 512, "size=${{SIZE}} = 4m in 8 KiB requests");
        assert_eq!(key(first, "pattern").as_str(), Some("random"));
        assert_eq!(int(second, "request_pages"), 4, "the second [global] applies below it only");
        assert_eq!(key(second, "pattern").as_str(), Some("sequential"));
        assert_eq!(float(second, "read_fraction"), 1.0);
    }

    #[test]
    fn an_include_of_itself_and_sections_in_includes_are_refused() {
        let folder = Folder::new("include");
        folder.file("self.fio", "include self.fio\n");
        let path = folder.file("loop.fio", "[job]\ninclude self.fio\n");
        let error = read_job_file(&path, &no_env).unwrap_err().to_string();
        assert!(error.contains("nest deeper"), "{error}");
        folder.file("section.fio", "[inner]\n");
        let path = folder.file("outer.fio", "[job]\ninclude section.fio\n");
        let error = read_job_file(&path, &no_env).unwrap_err().to_string();
        assert!(error.contains("section.fio:1") && error.contains("may not hold [sections]"), "{error}");
        let path = folder.file("host.fio", "[job]\nsize=8*$mb_memory\n");
        let error = read_job_file(&path, &no_env).unwrap_err().to_string();
        assert!(error.contains("host.fio:2") && error.contains("$mb_memory"), "{error}");
    }

    #[test]
    fn numjobs_clones_with_offset_increment_get_their_own_ranges() {
        let mapped = map_text(
            "clones",
            "[w]\nrw=write\nbs=4k\nnumjobs=3\noffset=4m\noffset_increment=8m\nsize=2m\nrandseed=42\n",
        )
        .unwrap();
        assert_eq!(mapped.seed, Some(42));
        let device = Device { page_bytes: 4096, pages: 13_107 };
        for (index, job) in mapped.jobs.iter().enumerate() {
            assert_eq!(key(job, "name").as_str(), Some(format!("w.{index}").as_str()));
            let first = 1024 + 2048 * index as u64;
            assert_eq!(float(job, "range_start"), fraction(first, device));
            assert_eq!(float(job, "range_end"), fraction(first + 512, device));
            // The job floors fraction × pages: the half page lands on the boundary.
            let floored = saturating::<u64>((float(job, "range_start") * 13_107.0).floor());
            assert_eq!(floored, first);
            assert_eq!(int(job, "requests"), 512);
        }
    }

    #[test]
    fn sizes_percentages_io_size_loops_and_number_ios_set_the_requests() {
        let mapped = map_text(
            "amounts",
            "[half]\nrw=randread\nsize=50%\n[more]\nrw=randwrite\nsize=1m\nio_size=3m\n\
             [looped]\nrw=write\nsize=1m\nloops=2\n[capped]\nrw=write\nsize=1m\nnumber_ios=10\n",
        )
        .unwrap();
        let requests: Vec<i64> = mapped.jobs.iter().map(|job| int(job, "requests")).collect();
        assert_eq!(requests, [13_107 / 2, 768, 512, 10]);
        assert_eq!(
            float(&mapped.jobs[0], "range_end"),
            fraction(13_107 / 2, Device { page_bytes: 4096, pages: 13_107 })
        );
    }

    #[test]
    fn rates_mixes_and_time_based_runs_map_to_the_jobs_rate() {
        let mapped = map_text(
            "rates",
            "[global]\nsize=1m\nioengine=libaio\n[mixed]\nrw=randrw\nrwmixread=30\nrwmixwrite=50\nrate_iops=300\n\
             [bytes]\nrw=randwrite\nbs=8k\nrate=800k\n[timed]\nrw=randread\nrate_iops=100\nruntime=10s\n\
             time_based\n[split]\nrw=randrw\nrate_iops=600,100\n",
        )
        .unwrap();
        let [mixed, bytes, timed, split] = mapped.jobs.as_slice() else { panic!() };
        // rwmixwrite comes last: 50 % writes; each direction capped at 300 → 600 in all.
        assert_eq!(float(mixed, "read_fraction"), 0.5);
        assert_eq!(int(mixed, "rate_iops"), 600);
        assert_eq!(int(bytes, "rate_iops"), 100, "800 KiB/s of 8 KiB requests");
        assert_eq!(int(timed, "requests"), 1000, "100 IOPS for 10 s, looping the 1 MiB region");
        assert_eq!(int(split, "rate_iops"), 200, "writes, half the requests, capped at 100");
    }

    #[test]
    fn a_synchronous_engine_keeps_one_request_outstanding() {
        let mapped = map_text(
            "depth",
            "[sync]\nrw=randwrite\nsize=1m\niodepth=32\n[aio]\nrw=randwrite\nsize=1m\niodepth=32\nioengine=io_uring\n",
        )
        .unwrap();
        assert_eq!(int(&mapped.jobs[0], "queue_depth"), 1);
        assert_eq!(int(&mapped.jobs[1], "queue_depth"), 32);
        let warning = mapped.warnings.iter().find(|warning| warning.option == "iodepth").unwrap();
        assert_eq!(warning.place.line, 4);
        assert!(warning.reason.contains("synchronous"), "{warning}");
    }

    #[test]
    fn distributions_map_to_zipf_and_hot_cold_or_are_refused_by_name() {
        let mapped = map_text(
            "distributions",
            "[global]\nrw=randwrite\nsize=1m\n[z]\nrandom_distribution=zipf:1.2\n[h]\nrandom_distribution=zoned:80/20:20/80\n",
        )
        .unwrap();
        assert_eq!(key(&mapped.jobs[0], "distribution").as_str(), Some("zipf"));
        assert_eq!(float(&mapped.jobs[0], "zipf_theta"), 1.2);
        assert_eq!(key(&mapped.jobs[1], "distribution").as_str(), Some("hot-cold"));
        assert_eq!(float(&mapped.jobs[1], "hot_write_fraction"), 0.8);
        assert_eq!(float(&mapped.jobs[1], "hot_space_fraction"), 0.2);
        for value in ["pareto:0.9", "normal:10", "zoned:50/5:30/15:20/", "zoned_abs:60/20G:40/10G"] {
            let message =
                refusal(map_text("refused-distribution", &format!("[j]\nrw=randread\nrandom_distribution={value}\n")));
            assert!(message.contains("job.fio:3") && message.contains(value), "{message}");
        }
    }

    #[test]
    fn unrepresentable_values_are_refused_naming_line_option_and_value() {
        for (text, line, needle) in [
            ("[j]\nrw=write\nbs=512\n", 3, "`bs=512`"),
            ("[j]\nrw=randrw\nbs=4k,8k\n", 3, "one request size"),
            ("[j]\nrw=randread\nbssplit=4k/50:8k/50\n", 3, "one request size"),
            ("[j]\nrw=write\nsize=1g\n", 3, "pass the end of the device"),
            ("[j]\nrw=write\nfsync=32\n", 3, "`fsync=32`"),
            ("[j]\nrw=randwrite\ntime_based\nruntime=60\n", 3, "`time_based`"),
            ("[a]\nrw=write\nsize=1m\n[b]\nstonewall\nrw=read\nsize=1m\n", 5, "`stonewall`"),
            ("[j]\nrw=trimwrite\n", 2, "trims each block"),
            ("[j]\nrw=read:-8k\n", 2, "modifier"),
            ("[j]\nioengine=cpuio\n", 2, "no block reads"),
            ("[j]\nrw=write\nrate=100\n", 3, "less than one request"),
            ("[a]\nrandseed=1\n[b]\nrandseed=2\n", 4, "different seeds"),
            ("[j]\nrw=sideways\n", 2, "not one of"),
        ] {
            let message = refusal(map_text("refused", text));
            assert!(message.contains(&format!("job.fio:{line}")) && message.contains(needle), "{text:?}: {message}");
        }
    }

    #[test]
    fn every_option_not_mapped_is_named_in_a_warning_once() {
        let mapped = map_text(
            "warnings",
            "[global]\nfilename=/dev/nvme0n1\nfrobnicate=3\n[a]\nrw=write\nsize=1m\n[b]\nrw=write\nsize=1m\ndirect=0\n",
        )
        .unwrap();
        let named: Vec<(usize, &str)> = mapped.warnings.iter().map(|w| (w.place.line, w.option.as_str())).collect();
        assert_eq!(named, [(2, "filename"), (3, "frobnicate"), (10, "direct")]);
        assert!(mapped.warnings[1].reason.contains("unknown"), "{}", mapped.warnings[1]);
    }
}
