//! Task branch and preserved ref names are always valid refs.

use super::*;

proptest! {
    #[test]
    fn any_title_yields_a_valid_branch_name(
        title in prop_oneof![any::<String>(), "[ -~]{0,120}", "[./@{}~^:?*\\[\\\\ -]{0,40}"],
        task in "[A-Za-z0-9_][A-Za-z0-9_-]{0,5}(\\.[A-Za-z0-9_-]{1,6}){0,3}|[A-Z]\\.lock",
    ) {
        let name = branch_name("task/", &id(&task), &title);
        prop_assert!(
            git2::Reference::is_valid_name(&format!("refs/heads/{name}")),
            "invalid: {name:?}"
        );
        let slug = slug(&title);
        prop_assert!(slug.len() <= 40);
        prop_assert!(slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        prop_assert!(!slug.starts_with('-') && !slug.ends_with('-') && !slug.contains("--"));
    }
}

#[test]
fn hostile_titles_pass_git_check_ref_format() {
    let repo = GitRepo::new();
    let titles = [
        "",
        "$(rm -rf ~); `echo pwned` && | > < 'quoted' \"double\"",
        "../../etc/passwd",
        "a/b/c/",
        "ends with a dot.",
        "foo.lock",
        "HEAD@{1} ~ ^ : ? * [ \\",
        "🚀🔥 emoji only 🎉",
        "Ünïcödé Çrème brûlée",
        "\t\n\r control \u{7f}",
        "--force",
        "@",
        "x".repeat(300).as_str(),
    ]
    .map(str::to_owned);
    for title in titles {
        for task in ["A", "A.1.2", "B-2.x_y", "A.lock"] {
            let name = branch_name("task/", &id(task), &title);
            repo.git(&["check-ref-format", "--branch", &name]);
            repo.git(&["check-ref-format", &format!("refs/heads/{name}")]);
        }
    }
}

#[test]
fn preserved_refs_are_valid_for_every_id() {
    assert_eq!(Repo::preserved_ref(&id("A.1.1")), "refs/ralph/tasks/A.1.1");
    assert_eq!(
        Repo::preserved_ref(&id("A.lock")),
        "refs/ralph/tasks/A.lock-task"
    );
}
