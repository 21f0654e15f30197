//! Headless Chromium for the tests that render a page (`ralph report`'s,
//! a terminal's screen), and a terminal's screen as a page.

use std::path::Path;
use std::process::{Command, Output};

/// Runs headless Chromium on `page` with `args`, a fresh profile and no
/// background traffic (this machine's network is closed).
pub(crate) fn chromium(page: &Path, args: &[&str]) -> Output {
    let profile = tempfile_dir();
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(output.status.success(), "{output:?}");
    output
}

fn tempfile_dir() -> assert_fs::TempDir {
    assert_fs::TempDir::new().expect("temp dir")
}

/// The addresses `page` asked headless Chromium for while it loaded, from
/// its network log: the requests a page started (their initiator is an
/// origin, `null` for a file), never Chromium's own calls home, whose
/// hosts change with its build (their initiator is `not an origin`).
pub(crate) fn chromium_requests(page: &Path) -> Vec<String> {
    let log = tempfile_dir();
    let net = log.path().join("net.json");
    chromium(
        page,
        &[&format!("--log-net-log={}", net.display()), "--dump-dom"],
    );
    let text = std::fs::read_to_string(&net).expect("chromium wrote its network log");
    // A log cut short at exit lacks its closing brackets.
    let log: serde_json::Value = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
        .expect("the network log is JSON");
    let mut urls: Vec<String> = (log["events"].as_array().into_iter().flatten())
        .filter(|event| {
            event["params"]["initiator"]
                .as_str()
                .is_some_and(|initiator| initiator != "not an origin")
        })
        .filter_map(|event| event["params"]["url"].as_str())
        .map(str::to_owned)
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Writes a PNG of `page` at `size` (pixels) to `out`.
pub(crate) fn chromium_screenshot(page: &Path, out: &Path, size: (u32, u32)) {
    chromium(
        page,
        &[
            &format!("--screenshot={}", out.display()),
            &format!("--window-size={},{}", size.0, size.1),
        ],
    );
    assert!(out.exists(), "no screenshot at {}", out.display());
}

/// The 16 colours of a dark terminal theme.
const PALETTE: [&str; 16] = [
    "#1e1e1e", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#d0d0d0",
    "#7f848e", "#ff7b86", "#b5e890", "#ffd68a", "#8cc8ff", "#e29cff", "#7fdbe6", "#ffffff",
];

/// A terminal's screen as `tmux capture-pane -e` prints it (text with
/// SGR escapes) as a page of coloured monospace text.
pub(crate) fn ansi_page(screen: &str) -> String {
    let mut html = String::from(
        "<!doctype html><meta charset=\"utf-8\"><style>body{margin:0;background:#1e1e1e}pre{margin:12px;font:14px/1.25 'DejaVu Sans Mono',monospace;color:#d0d0d0}</style><pre>",
    );
    let (mut fg, mut bg, mut bold, mut reverse): (Option<String>, Option<String>, bool, bool) =
        (None, None, false, false);
    let mut chars = screen.chars().peekable();
    let mut open = false;
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            let mut code = String::new();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    if c != 'm' {
                        code.clear();
                    }
                    break;
                }
                code.push(c);
            }
            let mut parts = code.split(';').map(|p| p.parse::<u32>().unwrap_or(0));
            while let Some(n) = parts.next() {
                match n {
                    0 => (fg, bg, bold, reverse) = (None, None, false, false),
                    1 => bold = true,
                    22 => bold = false,
                    7 => reverse = true,
                    27 => reverse = false,
                    30..=37 => fg = Some(PALETTE[(n - 30) as usize].to_owned()),
                    90..=97 => fg = Some(PALETTE[(n - 90 + 8) as usize].to_owned()),
                    39 => fg = None,
                    40..=47 => bg = Some(PALETTE[(n - 40) as usize].to_owned()),
                    100..=107 => bg = Some(PALETTE[(n - 100 + 8) as usize].to_owned()),
                    49 => bg = None,
                    38 | 48 => {
                        let colour = match parts.next() {
                            Some(5) => parts.next().map(|i| match i {
                                0..=15 => PALETTE[i as usize].to_owned(),
                                _ => "#a0a0a0".to_owned(),
                            }),
                            Some(2) => {
                                let (r, g, b) = (parts.next(), parts.next(), parts.next());
                                Some(format!(
                                    "rgb({},{},{})",
                                    r.unwrap_or(0),
                                    g.unwrap_or(0),
                                    b.unwrap_or(0)
                                ))
                            }
                            _ => None,
                        };
                        if n == 38 { fg = colour } else { bg = colour }
                    }
                    _ => {}
                }
            }
            if open {
                html.push_str("</span>");
            }
            let (mut front, mut back) = (fg.clone(), bg.clone());
            if reverse {
                front = Some(bg.clone().unwrap_or_else(|| PALETTE[0].to_owned()));
                back = Some(fg.clone().unwrap_or_else(|| PALETTE[7].to_owned()));
            }
            html.push_str(&format!(
                "<span style=\"{}{}{}\">",
                front.map(|c| format!("color:{c};")).unwrap_or_default(),
                back.map(|c| format!("background:{c};")).unwrap_or_default(),
                if bold { "font-weight:bold;" } else { "" },
            ));
            open = true;
            continue;
        }
        match c {
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '&' => html.push_str("&amp;"),
            c => html.push(c),
        }
    }
    if open {
        html.push_str("</span>");
    }
    html.push_str("</pre>\n");
    html
}

#[test]
fn a_screen_with_colours_becomes_spans() {
    let page = ansi_page("a\u{1b}[1;32mok\u{1b}[0m <b>\n\u{1b}[38;5;1mred\u{1b}[39m");
    assert!(
        page.contains("<span style=\"color:#98c379;font-weight:bold;\">ok</span>"),
        "{page}"
    );
    assert!(page.contains("&lt;b&gt;"), "{page}");
    assert!(
        page.contains("<span style=\"color:#e06c75;\">red</span>"),
        "{page}"
    );
}
