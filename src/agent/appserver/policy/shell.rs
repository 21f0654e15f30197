//! A command line read the way a POSIX shell splits it, as far as the
//! approval policy needs: its simple commands, what joins them (`&&`,
//! `;`, `|`, subshells), their words with the quotes taken away, and the
//! command lines their words run (`$(…)`, backticks, `<(…)`) and their
//! here-documents. Expansions are not performed: a word that has one says
//! so (`Word::literal`), and keeps it as written.

/// How deep command lines may nest (`$( $( … ) )`, `( ( … ) )`), so that
/// a line made to be deep cannot exhaust the stack.
pub(super) const DEEPEST: usize = 32;

/// Why a line nested deeper than `DEEPEST` is not read.
pub(super) const TOO_DEEP: &str = "its commands nest too deep";

/// A command line: pipelines run one after another (`;`, `&&`, `||`,
/// `&`, newlines).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Script(pub Vec<Pipeline>);

/// Commands joined by `|`, each reading what the one before it writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Pipeline(pub Vec<Command>);

/// One command of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Command {
    /// Words run as one program: `git -C . push`.
    Simple(Simple),
    /// `( … )`, run in a subshell: its change of folder ends with it.
    Subshell(Script),
}

/// A simple command: its words, and where its redirections lead.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Simple {
    /// The words, redirections left out.
    pub words: Vec<Word>,
    /// The targets of its redirections (`out.txt` of `> out.txt`).
    pub redirected: Vec<Word>,
    /// What a here-document or a here-string gives it as its input.
    pub input: Option<Word>,
}

/// A word, its quotes taken away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    /// The word unquoted, its expansions (`$HOME`, `$(pwd)`) as written.
    pub text: String,
    /// Whether the word means what it says: nothing in it is expanded
    /// (a variable, a substitution, `~`, a pattern or braces).
    pub literal: bool,
    /// The command lines the word runs to be expanded: `$(…)`, backticks,
    /// `<(…)` and `>(…)`.
    pub runs: Vec<Script>,
}

impl Default for Word {
    fn default() -> Word {
        Word {
            text: String::new(),
            literal: true,
            runs: Vec::new(),
        }
    }
}

/// `line` read as a command line, or why it cannot be read (an unclosed
/// quote, a line nested too deep).
#[cfg(test)]
pub(super) fn parse(line: &str) -> Result<Script, String> {
    parse_at(line, 0)
}

/// `line` read as a command line that is `depth` deep in others.
pub(super) fn parse_at(line: &str, depth: usize) -> Result<Script, String> {
    let mut reader = Reader {
        chars: line.chars().collect(),
        at: 0,
        depth,
    };
    reader.script(false)
}

/// Characters that end an unquoted word.
fn ends_word(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

struct Reader {
    chars: Vec<char>,
    at: usize,
    /// How deep in nested command lines the reader is.
    depth: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn since(&self, start: usize) -> String {
        self.chars[start..self.at].iter().collect()
    }

    /// Skips spaces, tabs and escaped newlines.
    fn blanks(&mut self) {
        loop {
            match (self.peek(), self.peek_at(1)) {
                (Some(' ' | '\t'), _) => self.at += 1,
                (Some('\\'), Some('\n')) => self.at += 2,
                _ => return,
            }
        }
    }

    /// A command line, up to the end of the text or, `in_parens`, up to
    /// its closing `)`.
    fn script(&mut self, in_parens: bool) -> Result<Script, String> {
        if self.depth > DEEPEST {
            return Err(TOO_DEEP.to_owned());
        }
        self.depth += 1;
        let mut script = Script::default();
        let mut pipeline = Pipeline::default();
        let mut simple = Simple::default();
        loop {
            self.blanks();
            let Some(c) = self.peek() else {
                if in_parens {
                    return Err("a `(` is not closed".to_owned());
                }
                break;
            };
            match c {
                ')' if in_parens => {
                    self.at += 1;
                    break;
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                '|' if self.peek_at(1) != Some('|') => {
                    self.at += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    end_simple(&mut simple, &mut pipeline);
                }
                '(' if !simple.words.is_empty() => {
                    // `name()` defines a function; its body follows.
                    self.at += 1;
                    self.blanks();
                    if self.peek() == Some(')') {
                        self.at += 1;
                    }
                    simple = Simple::default();
                }
                '(' => {
                    self.at += 1;
                    let inner = self.script(true)?;
                    pipeline.0.push(Command::Subshell(inner));
                }
                '<' | '>' if self.peek_at(1) == Some('(') => simple.words.push(self.word()?),
                '<' | '>' => self.redirect(&mut simple)?,
                '&' if self.peek_at(1) == Some('>') => self.redirect(&mut simple)?,
                '0'..='9' if self.fd_redirect() => self.redirect(&mut simple)?,
                // `;`, `&&`, `||`, `&`, a newline, `;;` and a `)` of a
                // `case` pattern all end a pipeline.
                ';' | '&' | '|' | '\n' | ')' => {
                    self.at += if self.peek_at(1) == Some(c) && c != '\n' {
                        2
                    } else {
                        1
                    };
                    end_simple(&mut simple, &mut pipeline);
                    end_pipeline(&mut pipeline, &mut script);
                }
                _ => simple.words.push(self.word()?),
            }
        }
        end_simple(&mut simple, &mut pipeline);
        end_pipeline(&mut pipeline, &mut script);
        self.depth -= 1;
        Ok(script)
    }

    /// Whether the digits ahead are a file descriptor of a redirection
    /// (`2>&1`), which it then skips.
    fn fd_redirect(&mut self) -> bool {
        let mut ahead = 0;
        while self.peek_at(ahead).is_some_and(|c| c.is_ascii_digit()) {
            ahead += 1;
        }
        let redirects = matches!(self.peek_at(ahead), Some('<' | '>'));
        if redirects {
            self.at += ahead;
        }
        redirects
    }

    /// A redirection: `> file`, `2>&1`, `&> log`, a here-string `<<< word`
    /// or a here-document `<< END`.
    fn redirect(&mut self, simple: &mut Simple) -> Result<(), String> {
        let rest: String = self.chars[self.at..].iter().take(3).collect();
        if rest.starts_with("<<<") {
            self.at += 3;
            self.blanks();
            simple.input = Some(self.word()?);
        } else if rest.starts_with("<<") {
            self.at += 2;
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.at += 1;
            }
            self.blanks();
            simple.input = Some(self.here_document(strip_tabs)?);
        } else {
            while self
                .peek()
                .is_some_and(|c| matches!(c, '<' | '>' | '&' | '|'))
            {
                self.at += 1;
            }
            self.blanks();
            if self
                .peek()
                .is_some_and(|c| !ends_word(c) || self.peek_at(1) == Some('('))
            {
                simple.redirected.push(self.word()?);
            }
        }
        Ok(())
    }

    /// A here-document: its delimiter is read here, and its body, the
    /// lines after the current one up to the delimiter's, is taken out of
    /// the text so reading goes on with the current line.
    fn here_document(&mut self, strip_tabs: bool) -> Result<Word, String> {
        let mut delimiter = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek().filter(|&c| !ends_word(c)) {
            self.at += 1;
            match c {
                '\'' | '"' => quoted = true,
                '\\' => {
                    quoted = true;
                    if let Some(next) = self.peek() {
                        delimiter.push(next);
                        self.at += 1;
                    }
                }
                c => delimiter.push(c),
            }
        }
        let Some(newline) = (self.at..self.chars.len()).find(|&i| self.chars[i] == '\n') else {
            return Ok(Word::default());
        };
        let start = newline + 1;
        let mut end = self.chars.len();
        let mut body_end = end;
        let mut line = start;
        while line < self.chars.len() {
            let line_end = (line..self.chars.len())
                .find(|&i| self.chars[i] == '\n')
                .unwrap_or(self.chars.len());
            let text: String = self.chars[line..line_end].iter().collect();
            let text = match strip_tabs {
                true => text.trim_start_matches('\t'),
                false => text.as_str(),
            };
            if text == delimiter {
                body_end = line;
                end = (line_end + 1).min(self.chars.len());
                break;
            }
            line = line_end + 1;
        }
        let body: String = self.chars[start..body_end].iter().collect();
        self.chars.drain(start..end);
        if quoted {
            return Ok(Word {
                text: body,
                ..Word::default()
            });
        }
        // An unquoted delimiter: the body is expanded like a string in
        // double quotes.
        let mut inner = Reader {
            chars: body.chars().collect(),
            at: 0,
            depth: self.depth,
        };
        let mut word = Word::default();
        inner.double(None, &mut word)?;
        Ok(word)
    }

    /// A word, up to the first unquoted blank or operator.
    fn word(&mut self) -> Result<Word, String> {
        let mut word = Word::default();
        if let (Some('<' | '>'), Some('(')) = (self.peek(), self.peek_at(1)) {
            // A process substitution, `<(curl …)`.
            let start = self.at;
            self.at += 2;
            word.runs.push(self.script(true)?);
            word.literal = false;
            word.text = self.since(start);
        }
        if self.peek() == Some('~') {
            word.literal = false;
        }
        while let Some(c) = self.peek().filter(|&c| !ends_word(c)) {
            match c {
                '\'' => {
                    self.at += 1;
                    loop {
                        match self.peek() {
                            None => return Err("a quote is not closed".to_owned()),
                            Some('\'') => break,
                            Some(c) => word.text.push(c),
                        }
                        self.at += 1;
                    }
                    self.at += 1;
                }
                '"' => {
                    self.at += 1;
                    self.double(Some('"'), &mut word)?;
                }
                '\\' => {
                    self.at += 1;
                    match self.peek() {
                        Some('\n') => self.at += 1,
                        Some(c) => {
                            word.text.push(c);
                            self.at += 1;
                        }
                        None => {}
                    }
                }
                '$' => self.dollar(false, &mut word)?,
                '`' => self.backticks(&mut word)?,
                '*' | '?' | '[' | '{' | '}' => {
                    word.literal = false;
                    word.text.push(c);
                    self.at += 1;
                }
                c => {
                    word.text.push(c);
                    self.at += 1;
                }
            }
        }
        Ok(word)
    }

    /// The inside of double quotes (or of an expanded here-document, up
    /// to the end, or of `${…}`), up to `end`, which it skips.
    fn double(&mut self, end: Option<char>, word: &mut Word) -> Result<(), String> {
        loop {
            match self.peek() {
                None if end.is_some() => return Err("a quote is not closed".to_owned()),
                None => return Ok(()),
                Some(c) if Some(c) == end => {
                    self.at += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some('\n') => self.at += 1,
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            word.text.push(c);
                            self.at += 1;
                        }
                        _ => word.text.push('\\'),
                    }
                }
                Some('$') => self.dollar(true, word)?,
                Some('`') => self.backticks(word)?,
                Some(c) => {
                    word.text.push(c);
                    self.at += 1;
                }
            }
        }
    }

    /// What follows a `$`: a substitution, an arithmetic expansion, a
    /// parameter, or (unquoted) a `$'…'` string.
    fn dollar(&mut self, quoted: bool, word: &mut Word) -> Result<(), String> {
        let start = self.at;
        self.at += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                // Arithmetic: only what it substitutes runs.
                self.at += 2;
                let mut open = 2;
                let mut inner = Word::default();
                while open > 0 {
                    match self.peek() {
                        None => return Err("a `$((` is not closed".to_owned()),
                        Some('$') => {
                            self.dollar(true, &mut inner)?;
                            continue;
                        }
                        Some('`') => {
                            self.backticks(&mut inner)?;
                            continue;
                        }
                        Some('(') => open += 1,
                        Some(')') => open -= 1,
                        _ => {}
                    }
                    self.at += 1;
                }
                word.runs.append(&mut inner.runs);
            }
            Some('(') => {
                self.at += 1;
                word.runs.push(self.script(true)?);
            }
            Some('{') => {
                self.at += 1;
                let mut inner = Word::default();
                self.double(Some('}'), &mut inner)?;
                word.runs.append(&mut inner.runs);
            }
            Some('\'') if !quoted => {
                self.at += 1;
                return self.ansi_c(word);
            }
            Some('"') if !quoted => {
                self.at += 1;
                return self.double(Some('"'), word);
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.at += 1;
                }
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => self.at += 1,
            _ => {
                word.text.push('$');
                return Ok(());
            }
        }
        word.literal = false;
        word.text.push_str(&self.since(start));
        Ok(())
    }

    /// The inside of `$'…'`, its escapes decoded (`$'\x67it'` is `git`).
    fn ansi_c(&mut self, word: &mut Word) -> Result<(), String> {
        loop {
            let Some(c) = self.peek() else {
                return Err("a quote is not closed".to_owned());
            };
            self.at += 1;
            match c {
                '\'' => return Ok(()),
                '\\' => {
                    let Some(escaped) = self.peek() else { continue };
                    self.at += 1;
                    let (radix, most) = match escaped {
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        '0'..='7' => {
                            self.at -= 1;
                            (8, 3)
                        }
                        other => {
                            word.text.push(match other {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                'a' => '\x07',
                                'b' => '\x08',
                                'e' | 'E' => '\x1b',
                                'f' => '\x0c',
                                'v' => '\x0b',
                                other => other,
                            });
                            continue;
                        }
                    };
                    let mut digits = String::new();
                    while digits.len() < most
                        && let Some(d) = self.peek().filter(|d| d.is_digit(radix))
                    {
                        digits.push(d);
                        self.at += 1;
                    }
                    match u32::from_str_radix(&digits, radix)
                        .ok()
                        .and_then(char::from_u32)
                    {
                        Some(decoded) => word.text.push(decoded),
                        // `\x` with no digits, or no character: left as it
                        // is, and the word says it is not plain.
                        None => word.literal = false,
                    }
                }
                c => word.text.push(c),
            }
        }
    }

    /// A command line in backticks, read as a line of its own once its
    /// escapes are taken away.
    fn backticks(&mut self, word: &mut Word) -> Result<(), String> {
        let start = self.at;
        self.at += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err("a backtick is not closed".to_owned()),
                Some('`') => break,
                Some('\\') if matches!(self.peek_at(1), Some('$' | '`' | '\\')) => {
                    inner.push(self.chars[self.at + 1]);
                    self.at += 2;
                    continue;
                }
                Some(c) => inner.push(c),
            }
            self.at += 1;
        }
        self.at += 1;
        word.runs.push(parse_at(&inner, self.depth + 1)?);
        word.literal = false;
        word.text.push_str(&self.since(start));
        Ok(())
    }
}

fn end_simple(simple: &mut Simple, pipeline: &mut Pipeline) {
    let simple = std::mem::take(simple);
    if !simple.words.is_empty() || !simple.redirected.is_empty() || simple.input.is_some() {
        pipeline.0.push(Command::Simple(simple));
    }
}

fn end_pipeline(pipeline: &mut Pipeline, script: &mut Script) {
    let pipeline = std::mem::take(pipeline);
    if !pipeline.0.is_empty() {
        script.0.push(pipeline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of each command of each pipeline, a subshell as `(…)`.
    fn shape(line: &str) -> Vec<Vec<Vec<String>>> {
        fn of(script: &Script) -> Vec<Vec<Vec<String>>> {
            (script.0.iter())
                .map(|pipeline| {
                    (pipeline.0.iter())
                        .map(|command| match command {
                            Command::Simple(simple) => {
                                simple.words.iter().map(|w| w.text.clone()).collect()
                            }
                            Command::Subshell(inner) => vec![format!("({:?})", of(inner))],
                        })
                        .collect()
                })
                .collect()
        }
        of(&parse(line).unwrap())
    }

    fn words(line: &str) -> Vec<Word> {
        match &parse(line).unwrap().0[0].0[0] {
            Command::Simple(simple) => simple.words.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_line_splits_into_pipelines_and_commands() {
        assert_eq!(
            shape("cd / && ls -l|wc; git status || true & echo\nmake"),
            [
                vec![vec!["cd", "/"]],
                vec![vec!["ls", "-l"], vec!["wc"]],
                vec![vec!["git", "status"]],
                vec![vec!["true"]],
                vec![vec!["echo"]],
                vec![vec!["make"]],
            ]
        );
        assert_eq!(
            shape("(cd /; ls) | cat"),
            [vec![
                vec![r#"([[["cd", "/"]], [["ls"]]])"#.to_owned()],
                vec!["cat".to_owned()]
            ]]
        );
        assert_eq!(shape("ls # && git push"), [vec![vec!["ls"]]]);
        assert_eq!(shape("echo a#b"), [vec![vec!["echo", "a#b"]]]);
    }

    #[test]
    fn quotes_are_taken_away_and_keep_operators_in_a_word() {
        assert_eq!(
            shape(r#"git commit -m "push; the && button" 'a | b' c\ d g''it $'\x67it'"#),
            [vec![vec![
                "git",
                "commit",
                "-m",
                "push; the && button",
                "a | b",
                "c d",
                "git",
                "git"
            ]]]
        );
        // Codex's own quoting of `bash -lc SCRIPT`.
        let codex = r#"/bin/bash -lc "printf 'done\\n' > e2e.txt && \""'$RALPH_BIN" task complete "$RALPH_TASK_ID"'"#;
        assert_eq!(
            shape(codex),
            [vec![vec![
                "/bin/bash",
                "-lc",
                r#"printf 'done\n' > e2e.txt && "$RALPH_BIN" task complete "$RALPH_TASK_ID""#
            ]]]
        );
    }

    #[test]
    fn expansions_are_kept_as_written_and_said() {
        let words = words(r#"cd ~ "$HOME" /tmp/* $(pwd) `pwd` ${X:-$(id)} plain 'it''s'"#);
        let seen: Vec<(&str, bool, usize)> = (words.iter())
            .map(|w| (w.text.as_str(), w.literal, w.runs.len()))
            .collect();
        assert_eq!(
            seen,
            [
                ("cd", true, 0),
                ("~", false, 0),
                ("$HOME", false, 0),
                ("/tmp/*", false, 0),
                ("$(pwd)", false, 1),
                ("`pwd`", false, 1),
                ("${X:-$(id)}", false, 1),
                ("plain", true, 0),
                ("its", true, 0),
            ]
        );
        let arithmetic = &super::tests::words("echo $(( $(git push) + `id -u` ))")[1];
        assert_eq!(
            arithmetic.runs,
            [parse("git push").unwrap(), parse("id -u").unwrap()]
        );
        let words = super::tests::words("bash <(curl -s x)");
        assert_eq!(words[1].text, "<(curl -s x)");
        assert_eq!(
            words[1].runs,
            [parse("curl -s x").unwrap()],
            "a process substitution runs its line"
        );
    }

    #[test]
    fn redirections_are_not_words() {
        let script = parse("cargo test 2>&1 > out.txt < <(curl x) &>> log").unwrap();
        let Command::Simple(simple) = &script.0[0].0[0] else {
            panic!()
        };
        let texts = |words: &[Word]| words.iter().map(|w| w.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&simple.words), ["cargo", "test"]);
        assert_eq!(
            texts(&simple.redirected),
            ["1", "out.txt", "<(curl x)", "log"]
        );
    }

    #[test]
    fn a_here_document_is_input_not_commands() {
        let script =
            parse("cat > notes.md <<'EOF' && git add notes.md\ngit push\ncd /\nEOF\nls").unwrap();
        assert_eq!(script.0.len(), 3, "{script:?}");
        let Command::Simple(cat) = &script.0[0].0[0] else {
            panic!()
        };
        assert_eq!(cat.input.as_ref().unwrap().text, "git push\ncd /\n");
        assert!(cat.input.as_ref().unwrap().runs.is_empty());
        let expanded = parse("bash <<-END\n\techo $(curl x)\n\tEND").unwrap();
        let Command::Simple(bash) = &expanded.0[0].0[0] else {
            panic!()
        };
        let input = bash.input.as_ref().unwrap();
        assert_eq!(input.runs, [parse("curl x").unwrap()]);
        assert_eq!(words("sh <<< 'git push'").len(), 1);
    }

    #[test]
    fn control_words_and_functions_leave_their_commands_readable() {
        assert_eq!(
            shape("if test -d x; then cd x; else exit 1; fi"),
            [
                vec![vec!["if", "test", "-d", "x"]],
                vec![vec!["then", "cd", "x"]],
                vec![vec!["else", "exit", "1"]],
                vec![vec!["fi"]],
            ]
        );
        assert_eq!(
            shape("f() { git push; }; f"),
            [
                vec![vec!["{", "git", "push"]],
                vec![vec!["}"]],
                vec![vec!["f"]]
            ]
        );
    }

    #[test]
    fn an_unreadable_line_says_why() {
        for (line, why) in [
            ("echo 'open", "a quote is not closed"),
            ("echo \"open", "a quote is not closed"),
            ("echo $(ls", "a `(` is not closed"),
            ("(ls", "a `(` is not closed"),
            ("echo `ls", "a backtick is not closed"),
            ("echo $'x", "a quote is not closed"),
        ] {
            assert_eq!(parse(line), Err(why.to_owned()), "{line}");
        }
        let deep = format!("{}ls{}", "$(".repeat(100), ")".repeat(100));
        assert_eq!(parse(&deep), Err(TOO_DEEP.to_owned()));
        let deep = format!("{}ls{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse(&deep).is_err());
    }
}
