//! [`markdown_to_html`]: a summary's markdown as one self-contained HTML page
//! (inline CSS, every SVG plot inlined, a table of contents), readable offline
//! and printable. It reads exactly the markdown [`crate::Summary`] and
//! [`crate::nest_summary`] write: headings, paragraphs, bullets, tables,
//! fenced code, images on a line of their own, and `<a id>` anchors.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;\
line-height:1.45;color:#111}table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}\
th,td{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#eee}\
pre{background:#f4f4f4;padding:.6rem;overflow-x:auto}code{background:#f4f4f4;padding:0 .2rem}\
figure{margin:1rem 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.85rem;color:#444}\
nav{background:#f8f8f8;border:1px solid #ddd;padding:.5rem 1rem}nav ul{margin:.2rem 0}";

/// `markdown` as a standalone HTML document titled `title`. Images whose
/// file is an SVG in `base` are inlined (others stay links, and a missing
/// file says so in place); the contents list every level-2 and level-3 heading.
#[must_use]
pub fn markdown_to_html(title: &str, markdown: &str, base: &Path) -> String {
    let mut body = String::new();
    let mut contents: Vec<(usize, String, String)> = Vec::new();
    let mut ids = HashSet::new();
    let lines: Vec<&str> = markdown.lines().collect();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let trimmed = line.trim();
        if trimmed.is_empty() {
            index += 1;
        } else if let Some(language) = trimmed.strip_prefix("```") {
            let end = lines[index + 1..]
                .iter()
                .position(|l| l.trim_start().starts_with("```"))
                .map_or(lines.len(), |at| index + 1 + at);
            let code: Vec<&str> = lines[index + 1..end].to_vec();
            let _ = writeln!(
                body,
                "<pre><code class=\"language-{}\">{}</code></pre>",
                escape(language),
                escape(&code.join("\n"))
            );
            index = end + 1;
        } else if trimmed.starts_with('#') {
            let level = trimmed.chars().take_while(|c| *c == '#').count().min(6);
            let text = trimmed[level..].trim();
            let id = unique_id(&slug(text), &mut ids);
            if (2..=3).contains(&level) {
                contents.push((level, id.clone(), text.to_owned()));
            }
            let _ = writeln!(body, "<h{level} id=\"{id}\">{}</h{level}>", inline(text));
            index += 1;
        } else if trimmed.starts_with("<a id=") {
            let _ = writeln!(body, "{trimmed}");
            index += 1;
        } else if let Some((alt, file)) = image(trimmed) {
            body.push_str(&figure(alt, file, base));
            index += 1;
        } else if trimmed.starts_with('|') {
            let end = block_end(&lines, index, |l| l.trim_start().starts_with('|'));
            body.push_str(&table(&lines[index..end]));
            index = end;
        } else if trimmed.starts_with("- ") {
            let end = block_end(&lines, index, |l| l.trim_start().starts_with("- "));
            body.push_str("<ul>\n");
            for item in &lines[index..end] {
                let _ = writeln!(body, "<li>{}</li>", inline(item.trim_start()[2..].trim()));
            }
            body.push_str("</ul>\n");
            index = end;
        } else {
            let end = block_end(&lines, index, |l| {
                let t = l.trim();
                !t.is_empty()
                    && !t.starts_with('#')
                    && !t.starts_with('|')
                    && !t.starts_with("```")
                    && !t.starts_with("- ")
            });
            let text: Vec<&str> = lines[index..end].iter().map(|l| l.trim()).collect();
            let _ = writeln!(body, "<p>{}</p>", inline(&text.join(" ")));
            index = end.max(index + 1);
        }
    }
    let mut page = String::with_capacity(body.len() + 4096);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    );
    if !contents.is_empty() {
        page.push_str("<nav><strong>Contents</strong>\n<ul>\n");
        for (level, id, text) in &contents {
            let indent = if *level == 3 { " style=\"margin-left:1.5rem\"" } else { "" };
            let _ = writeln!(page, "<li{indent}><a href=\"#{id}\">{}</a></li>", inline(text));
        }
        page.push_str("</ul></nav>\n");
    }
    page.push_str(&body);
    page.push_str("</body>\n</html>\n");
    page
}

/// The index after the run of lines from `start` that `belongs` accepts.
fn block_end(lines: &[&str], start: usize, belongs: impl Fn(&str) -> bool) -> usize {
    lines[start..].iter().position(|line| !belongs(line)).map_or(lines.len(), |at| start + at)
}

/// `![alt](file)` as the whole line.
fn image(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("![")?;
    let (alt, rest) = rest.split_once("](")?;
    let file = rest.strip_suffix(')')?;
    Some((alt, file))
}

fn figure(alt: &str, file: &str, base: &Path) -> String {
    let caption = format!("<figcaption>{} ({})</figcaption>", inline(alt), escape(file));
    let relative = !file.contains("://") && !file.starts_with('/');
    let svg = if relative && file.ends_with(".svg") { std::fs::read_to_string(base.join(file)).ok() } else { None };
    match svg {
        Some(svg) => {
            let start = svg.find("<svg").unwrap_or(0);
            format!("<figure>\n{}\n{caption}</figure>\n", svg[start..].trim_end())
        }
        None if relative && !base.join(file).exists() => {
            format!("<figure><p><em>missing plot {}</em></p>{caption}</figure>\n", escape(file))
        }
        None => format!("<figure><img src=\"{}\" alt=\"{}\">{caption}</figure>\n", escape(file), escape(alt)),
    }
}

fn table(rows: &[&str]) -> String {
    let mut html = String::from("<table>\n");
    for (number, row) in rows.iter().enumerate() {
        let cells = split_cells(row);
        if number == 1 && cells.iter().all(|cell| cell.chars().all(|c| c == '-' || c == ':')) {
            continue;
        }
        let tag = if number == 0 { "th" } else { "td" };
        html.push_str("<tr>");
        for cell in cells {
            let _ = write!(html, "<{tag}>{}</{tag}>", inline(&cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    html
}

/// The cells of a `| a | b |` row; `\|` is a literal bar.
fn split_cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                push_char(&mut cells, '|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => push_char(&mut cells, c),
        }
    }
    cells.iter().map(|cell| cell.trim().to_owned()).collect()
}

fn push_char(cells: &mut [String], c: char) {
    if let Some(cell) = cells.last_mut() {
        cell.push(c);
    }
}

/// Inline markdown: `code`, **strong**, *emphasis*, [text](link); the rest escaped.
fn inline(text: &str) -> String {
    let mut html = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                let _ = write!(html, "<code>{}</code>", escape(&after[..end]));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if let Some(end) = after.find("**") {
                let _ = write!(html, "<strong>{}</strong>", inline(&after[..end]));
                rest = &after[end + 2..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix('*') {
            if let Some(end) = after.find('*').filter(|&end| end > 0 && !after.starts_with(' ')) {
                let _ = write!(html, "<em>{}</em>", inline(&after[..end]));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix('[') {
            if let Some((label, tail)) = after.split_once("](") {
                if let Some(end) = tail.find(')').filter(|_| !label.contains(']')) {
                    let _ = write!(html, "<a href=\"{}\">{}</a>", escape(&tail[..end]), inline(label));
                    rest = &tail[end + 1..];
                    continue;
                }
            }
        }
        let next =
            rest.char_indices().skip(1).find(|(_, c)| matches!(c, '`' | '*' | '[')).map_or(rest.len(), |(at, _)| at);
        html.push_str(&escape(&rest[..next]));
        rest = &rest[next..];
    }
    html
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A heading's anchor: lower-case letters and digits, other runs as one `-`.
fn slug(text: &str) -> String {
    let mut slug = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() {
        "section".to_owned()
    } else {
        slug
    }
}

fn unique_id(base: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = base.to_owned();
    let mut number = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{base}-{number}");
        number += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_becomes_one_page_with_contents_tables_and_inline_plots() {
        let dir = tempfile_dir();
        std::fs::write(dir.join("plot.svg"), "<?xml version=\"1.0\"?>\n<svg width=\"10\"><text>drawn</text></svg>\n")
            .expect("svg");
        let markdown = "# Title\n\nSome *text* with `code` & [a link](data.csv).\n\n## Results\n\n![the plot](plot.svg)\n\n\
                        ![gone](missing.svg)\n\n| a | b |\n|---|---|\n| x\\|y | <z> |\n\n- one\n- two\n\n```sh\nnandlab run\n```\n\n## Results\n";
        let html = markdown_to_html("T", markdown, &dir);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<nav>") && html.contains("href=\"#results\"") && html.contains("href=\"#results-2\""));
        assert!(html.contains("<em>text</em>") && html.contains("<code>code</code>") && html.contains("&amp;"));
        assert!(html.contains("<a href=\"data.csv\">a link</a>"));
        assert!(html.contains("<svg width=\"10\"><text>drawn</text></svg>") && !html.contains("<?xml"), "{html}");
        assert!(html.contains("missing plot missing.svg"));
        assert!(html.contains("<td>x|y</td><td>&lt;z&gt;</td>"), "{html}");
        assert!(
            html.contains("<li>one</li>") && html.contains("<pre><code class=\"language-sh\">nandlab run</code></pre>")
        );
        std::fs::remove_dir_all(dir).expect("cleanup");
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nandlab-html-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        dir
    }
}
