//! The README is the way in and docs/ holds the manual: the README stays
//! short and links every page of the manual, and every link in them, like
//! every pointer from ralph's sources into the manual, lands on a file and
//! a heading that exist.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(files_under(&root().join("docs"), "md"));
    pages.sort();
    pages
}

/// The files ending in `.{extension}` under `folder`, at any depth.
fn files_under(folder: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files = vec![];
    for entry in std::fs::read_dir(folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
        let path = entry.expect("read a folder entry").path();
        if path.is_dir() {
            files.extend(files_under(&path, extension));
        } else if path.extension().is_some_and(|e| e == extension) {
            files.push(path);
        }
    }
    files
}

/// The lines of `text` outside fenced code blocks, numbered from 1.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = vec![];
    for (at, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((at + 1, line));
        }
    }
    lines
}

/// The text of each heading (`## The prompt` is `The prompt`).
fn headings(text: &str) -> Vec<&str> {
    prose(text)
        .into_iter()
        .filter_map(|(_, line)| {
            let rest = line.trim_start_matches('#');
            (rest.len() < line.len()).then(|| rest.strip_prefix(' '))?
        })
        .collect()
}

/// The anchors GitHub gives the headings: lower case, spaces as dashes,
/// punctuation dropped, `-1`, `-2`, ... after a repeated one.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    headings(text)
        .into_iter()
        .map(|heading| {
            let slug: String = heading
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    '-' | '_' => Some(c),
                    c if c.is_alphanumeric() => Some(c),
                    _ => None,
                })
                .collect();
            let count = seen.entry(slug.clone()).or_default();
            *count += 1;
            match *count {
                1 => slug,
                n => format!("{slug}-{}", n - 1),
            }
        })
        .collect()
}

#[test]
fn the_readme_is_short_and_links_every_page_of_the_manual() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
    for page in pages() {
        let name = page.strip_prefix(root()).expect("a page in the repository");
        if name.parent() == Some(Path::new("docs")) {
            let link = format!("]({})", name.display());
            assert!(readme.contains(&link), "README.md has no link to {name:?}");
        }
    }
}

#[test]
fn every_link_in_the_readme_and_the_manual_lands() {
    let link = regex::Regex::new(r"\]\(([^()\s]+)\)").expect("a regex");
    let mut checked = 0;
    let mut broken = vec![];
    for page in pages() {
        let text = read(&page);
        let name = page.strip_prefix(root()).expect("a page in the repository");
        for (line, prose) in prose(&text) {
            for found in link.captures_iter(prose) {
                let target = &found[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let place = format!("{}:{line}: ({target})", name.display());
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = match path {
                    "" => page.clone(),
                    path => page.parent().expect("a page's folder").join(path),
                };
                if !file.exists() {
                    broken.push(format!("{place}: no such file"));
                } else if !anchor.is_empty() && !anchors(&read(&file)).iter().any(|a| a == anchor) {
                    broken.push(format!("{place}: no such heading"));
                }
            }
        }
    }
    // Enough that a broken extractor cannot pass by finding nothing.
    assert!(checked >= 40, "only {checked} links found");
    assert!(
        broken.is_empty(),
        "links that land nowhere:\n{}",
        broken.join("\n")
    );
}

/// Messages and comments in src/ name a place in the manual as
/// `docs/FILE.md, "Heading"` or `docs/FILE.md, section Heading`.
#[test]
fn every_section_the_sources_point_at_exists() {
    let pointer = regex::Regex::new(
        r#"docs/([A-Z]+\.md), (?:\\?"([^"\\]+)\\?"|section ([A-Z][a-z]*(?: [a-z]+)*))"#,
    )
    .expect("a regex");
    let sources = files_under(&root().join("src"), "rs");
    let mut checked = 0;
    let mut missing = vec![];
    for source in sources {
        for found in pointer.captures_iter(&read(&source)) {
            let page = root().join("docs").join(&found[1]);
            let heading = found.get(2).or(found.get(3)).expect("a heading").as_str();
            checked += 1;
            let exists = page.exists() && headings(&read(&page)).contains(&heading);
            if !exists {
                let name = source
                    .strip_prefix(root())
                    .expect("a source in the repository");
                missing.push(format!("{}: {}", name.display(), &found[0]));
            }
        }
    }
    assert!(checked >= 4, "only {checked} pointers found");
    assert!(
        missing.is_empty(),
        "pointers to sections that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The design contract is in the repository, and every citation of it
/// (`docs/DESIGN.md section 6b`, in src/, tests/ and docs/) names a
/// section it has; every page and heading it points at exists.
#[test]
fn every_citation_of_the_design_contract_resolves() {
    let design = read(&root().join("docs/DESIGN.md"));
    let sections: Vec<&str> = headings(&design)
        .into_iter()
        .filter_map(|heading| heading.split_once(". ").map(|(number, _)| number))
        .collect();
    assert!(sections.contains(&"6b"), "sections: {sections:?}");
    let citation = regex::Regex::new(r"DESIGN\.md,? section (\d+[a-z]?)(?: and (\d+[a-z]?))?")
        .expect("a regex");
    let mut files = pages();
    files.extend(files_under(&root().join("src"), "rs"));
    files.extend(files_under(&root().join("tests"), "rs"));
    let (mut checked, mut missing) = (0, vec![]);
    for file in files {
        let text = read(&file);
        if text.contains("DESIGN.md") && !text.contains("docs/DESIGN.md") {
            missing.push(format!("{}: cites DESIGN.md without docs/", file.display()));
        }
        for found in citation.captures_iter(&text) {
            for number in [found.get(1), found.get(2)].into_iter().flatten() {
                checked += 1;
                if !sections.contains(&number.as_str()) {
                    missing.push(format!("{}: {}", file.display(), &found[0]));
                }
            }
        }
    }
    let pointer = regex::Regex::new(r#"docs/([A-Z]+\.md), "([^"]+)""#).expect("a regex");
    for found in pointer.captures_iter(&design) {
        checked += 1;
        let page = read(&root().join("docs").join(&found[1]));
        if !headings(&page).contains(&&found[2]) {
            missing.push(format!("docs/DESIGN.md: {}", &found[0]));
        }
    }
    assert!(checked >= 8, "only {checked} citations found");
    assert!(
        missing.is_empty(),
        "citations that do not resolve:\n{}",
        missing.join("\n")
    );
}
