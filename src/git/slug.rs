//! Task branch names: `<prefix><id>-<slug>`, where the slug is the title
//! folded to lowercase ASCII words joined by `-`.

/// The longest slug, in bytes (ASCII, so also in characters).
pub const MAX_SLUG_LEN: usize = 40;

/// The slug of `title`: lowercase ASCII letters and digits, words separated by
/// single `-`, at most [`MAX_SLUG_LEN`] characters, cut at a word boundary
/// where there is one. Common Latin letters are transliterated (`é` -> `e`,
/// `ß` -> `ss`); every other character separates words. May be empty.
pub fn slug(title: &str) -> String {
    let mut words = String::new();
    let mut pending_dash = false;
    for ch in title.chars() {
        let folded = fold(ch);
        if folded.is_empty() {
            pending_dash = !words.is_empty();
            continue;
        }
        if pending_dash {
            words.push('-');
            pending_dash = false;
        }
        words.push_str(folded);
    }
    truncate(words)
}

/// The branch name for task `id` titled `title`, without `refs/heads/`:
/// `<prefix><id>-<slug>`, or `<prefix><id>` when the slug is empty. The
/// slug is of the title with its secrets masked: a branch may be pushed.
pub fn branch_name(prefix: &str, id: &str, title: &str) -> String {
    let slug = slug(&crate::redact::redact(title));
    let mut name = format!("{prefix}{id}");
    if !slug.is_empty() {
        name.push('-');
        name.push_str(&slug);
    } else if name.ends_with(".lock") {
        // A ref component may not end in `.lock` (an id like `A.lock`).
        name.push_str("-task");
    }
    name
}

/// Whether `branch` is a task branch of `id` under `prefix`, whatever title
/// it was named after: `<prefix><id>` or `<prefix><id>-...`.
pub(super) fn is_branch_of(branch: &str, prefix: &str, id: &str) -> bool {
    branch
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix(id))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

fn truncate(mut words: String) -> String {
    if words.len() <= MAX_SLUG_LEN {
        return words;
    }
    // Prefer ending on a whole word; a single overlong word is cut hard.
    let cut = if words.as_bytes()[MAX_SLUG_LEN] == b'-' {
        MAX_SLUG_LEN
    } else {
        words[..MAX_SLUG_LEN].rfind('-').unwrap_or(MAX_SLUG_LEN)
    };
    words.truncate(cut);
    words
}

/// The lowercase ASCII spelling of `ch`, or "" when it separates words.
fn fold(ch: char) -> &'static str {
    const ALNUM: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
    if ch.is_ascii_alphanumeric() {
        let lower = ch.to_ascii_lowercase();
        let at = ALNUM.find(lower).expect("ASCII alphanumerics are in ALNUM");
        return &ALNUM[at..at + 1];
    }
    match ch {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' | 'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å'
        | 'Ā' | 'Ă' | 'Ą' => "a",
        'æ' | 'Æ' => "ae",
        'ç' | 'ć' | 'č' | 'Ç' | 'Ć' | 'Č' => "c",
        'ď' | 'đ' | 'ð' | 'Ď' | 'Đ' | 'Ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' | 'È' | 'É' | 'Ê' | 'Ë' | 'Ē' | 'Ė' | 'Ę'
        | 'Ě' => "e",
        'ğ' | 'Ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' | 'ı' | 'Ì' | 'Í' | 'Î' | 'Ï' | 'Ī' | 'Į' | 'İ' => {
            "i"
        }
        'ł' | 'ľ' | 'ĺ' | 'Ł' | 'Ľ' | 'Ĺ' => "l",
        'ñ' | 'ń' | 'ň' | 'Ñ' | 'Ń' | 'Ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' | 'Ō'
        | 'Ő' => "o",
        'œ' | 'Œ' => "oe",
        'ř' | 'ŕ' | 'Ř' | 'Ŕ' => "r",
        'ś' | 'š' | 'ş' | 'ș' | 'Ś' | 'Š' | 'Ş' | 'Ș' => "s",
        'ß' | 'ẞ' => "ss",
        'ť' | 'ţ' | 'ț' | 'Ť' | 'Ţ' | 'Ț' => "t",
        'þ' | 'Þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' | 'Ù' | 'Ú' | 'Û' | 'Ü' | 'Ū' | 'Ů' | 'Ű'
        | 'Ų' => "u",
        'ý' | 'ÿ' | 'Ý' | 'Ÿ' => "y",
        'ź' | 'ż' | 'ž' | 'Ź' | 'Ż' | 'Ž' => "z",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_folds_words_to_lowercase_ascii() {
        assert_eq!(slug("Choose session library"), "choose-session-library");
        assert_eq!(
            slug("  Fix: `rm -rf /` && echo $HOME!  "),
            "fix-rm-rf-echo-home"
        );
        assert_eq!(slug("Crème brûlée für Straße"), "creme-brulee-fur-strasse");
        assert_eq!(slug("Ærø Œuvre Łódź"), "aero-oeuvre-lodz");
        assert_eq!(slug("v1.2..3 @{upstream} ~^:?*[\\"), "v1-2-3-upstream");
        assert_eq!(slug("日本語 🚀 emoji"), "emoji");
    }

    #[test]
    fn slug_may_be_empty() {
        assert_eq!(slug(""), "");
        assert_eq!(slug("🚀🚀 — …"), "");
        assert_eq!(slug("../.."), "");
    }

    #[test]
    fn slug_is_cut_at_a_word_boundary_within_the_limit() {
        let title = "implement the branch per task workflow with squash merges";
        assert_eq!(slug(title), "implement-the-branch-per-task-workflow");
        assert_eq!(slug(&"x".repeat(50)), "x".repeat(40));
        // A word ending exactly at the limit is kept whole.
        let exact = format!("{} tail", "y".repeat(40));
        assert_eq!(slug(&exact), "y".repeat(40));
    }

    #[test]
    fn branch_names_join_prefix_id_and_slug() {
        assert_eq!(
            branch_name("task/", "A.1.1", "Choose session library"),
            "task/A.1.1-choose-session-library"
        );
        assert_eq!(branch_name("task/", "B", "🚀"), "task/B");
        assert_eq!(branch_name("task/", "A.lock", ""), "task/A.lock-task");
        assert_eq!(branch_name("", "C_2", "Go"), "C_2-go");
        assert_eq!(
            branch_name("task/", "D", "use ghp_0123456789abcdefghijklmnopqrstuvwxyz"),
            "task/D-use-redacted"
        );
    }

    #[test]
    fn a_branch_belongs_to_its_id_only() {
        let a1 = "A.1";
        assert!(is_branch_of("task/A.1-foo", "task/", a1));
        assert!(is_branch_of("task/A.1", "task/", a1));
        assert!(!is_branch_of("task/A.11-foo", "task/", a1));
        assert!(!is_branch_of("task/A.1.2-foo", "task/", a1));
        assert!(!is_branch_of("other/A.1-foo", "task/", a1));
    }
}
