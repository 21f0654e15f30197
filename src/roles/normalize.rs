//! Turning the seed's trigger syntax into plain evalexpr 11.3 syntax.
//!
//! Accepted on top of evalexpr: single-quoted strings, `and`/`or`/`not`,
//! and infix `X contains Y`, `X starts_with Y`, `X matches Y`, which become
//! calls `contains(X, Y)`. Evalexpr has none of these natively.

/// Functions that may also be written infix (`task_title contains 'x'`).
const INFIX: [&str; 3] = ["contains", "starts_with", "matches"];

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Number(String),
    Str(String),
    Open,
    Close,
    Comma,
    Op(String),
}

/// Rewrites `condition` into evalexpr syntax, or says what is wrong.
pub fn normalize(condition: &str) -> Result<String, String> {
    let tokens = tokenize(condition)?;
    let rewritten = rewrite(&tokens)?;
    Ok(render(&rewritten))
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            ',' => tokens.push(Token::Comma),
            quote @ ('\'' | '"') => {
                let mut value = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    if c == quote {
                        closed = true;
                        break;
                    }
                    if c == '\\' {
                        match chars.next() {
                            Some((_, escaped)) => value.push(escaped),
                            None => break,
                        }
                    } else {
                        value.push(c);
                    }
                }
                if !closed {
                    return Err(format!(
                        "unterminated string starting at column {}",
                        start + 1
                    ));
                }
                tokens.push(Token::Str(value));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = start + c.len_utf8();
                while let Some(&(i, next)) = chars.peek() {
                    if next.is_ascii_alphanumeric() || next == '_' {
                        end = i + next.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Ident(text[start..end].to_owned()));
            }
            c if c.is_ascii_digit() => {
                let mut end = start + 1;
                while let Some(&(i, next)) = chars.peek() {
                    if next.is_ascii_digit() || next == '.' {
                        end = i + 1;
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Number(text[start..end].to_owned()));
            }
            _ => {
                // Operators: take the two-character ones evalexpr knows whole.
                let two: String = text[start..].chars().take(2).collect();
                if [
                    "==", "!=", ">=", "<=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "^=",
                ]
                .contains(&two.as_str())
                {
                    chars.next();
                    tokens.push(Token::Op(two));
                } else {
                    tokens.push(Token::Op(c.to_string()));
                }
            }
        }
    }
    Ok(tokens)
}

/// Maps keywords and turns infix calls into prefix calls.
fn rewrite(tokens: &[Token]) -> Result<Vec<Token>, String> {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "and" => out.push(Token::Op("&&".into())),
            Token::Ident(word) if word == "or" => out.push(Token::Op("||".into())),
            Token::Ident(word) if word == "not" => out.push(Token::Op("!".into())),
            // After an operand it is infix; elsewhere only a call may follow.
            Token::Ident(word)
                if INFIX.contains(&word.as_str())
                    && (primary_start(&out).is_some()
                        || tokens.get(i + 1) != Some(&Token::Open)) =>
            {
                let left_start = primary_start(&out)
                    .ok_or_else(|| format!("`{word}` needs a value on its left"))?;
                let left = out.split_off(left_start);
                let right_end = primary_end(tokens, i + 1)
                    .ok_or_else(|| format!("`{word}` needs a value on its right"))?;
                let right = rewrite(&tokens[i + 1..right_end])?;
                out.push(Token::Ident(word.clone()));
                out.push(Token::Open);
                out.extend(left);
                out.push(Token::Comma);
                out.extend(right);
                out.push(Token::Close);
                i = right_end;
                continue;
            }
            token => out.push(token.clone()),
        }
        i += 1;
    }
    Ok(out)
}

/// Where the operand ending at the end of `out` starts: a literal, a
/// variable, a parenthesised group, or a function call.
fn primary_start(out: &[Token]) -> Option<usize> {
    let last = out.len().checked_sub(1)?;
    match out[last] {
        Token::Ident(_) | Token::Number(_) | Token::Str(_) => Some(last),
        Token::Close => {
            let mut depth = 0;
            for j in (0..=last).rev() {
                match out[j] {
                    Token::Close => depth += 1,
                    Token::Open => {
                        depth -= 1;
                        if depth == 0 {
                            let is_call = j > 0 && matches!(out[j - 1], Token::Ident(_));
                            return Some(if is_call { j - 1 } else { j });
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        _ => None,
    }
}

/// One past the end of the operand starting at `tokens[start]`.
fn primary_end(tokens: &[Token], start: usize) -> Option<usize> {
    let group_end = |open: usize| {
        let mut depth = 0;
        for (j, token) in tokens.iter().enumerate().skip(open) {
            match token {
                Token::Open => depth += 1,
                Token::Close => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                _ => {}
            }
        }
        None
    };
    match tokens.get(start)? {
        Token::Ident(_) if tokens.get(start + 1) == Some(&Token::Open) => group_end(start + 1),
        Token::Ident(_) | Token::Number(_) | Token::Str(_) => Some(start + 1),
        Token::Open => group_end(start),
        _ => None,
    }
}

fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    for (i, token) in tokens.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &tokens[p]);
        let space = !matches!(
            (previous, token),
            (None, _)
                | (_, Token::Close | Token::Comma)
                | (Some(Token::Open), _)
                | (Some(Token::Ident(_)), Token::Open)
        );
        if space {
            out.push(' ');
        }
        match token {
            Token::Ident(word) | Token::Number(word) | Token::Op(word) => out.push_str(word),
            Token::Str(value) => {
                out.push('"');
                out.push_str(&value.replace('\\', "\\\\").replace('"', "\\\""));
                out.push('"');
            }
            Token::Open => out.push('('),
            Token::Close => out.push(')'),
            Token::Comma => out.push(','),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalize;

    fn n(text: &str) -> String {
        normalize(text).unwrap()
    }

    #[test]
    fn the_seed_conditions_normalize() {
        assert_eq!(n("branch_commits >= 5"), "branch_commits >= 5");
        assert_eq!(
            n("task_title contains 'refactor'"),
            "contains(task_title, \"refactor\")"
        );
        assert_eq!(n("last_iteration_failed"), "last_iteration_failed");
        assert_eq!(
            n("iterations_since_role('documenter') >= 10"),
            "iterations_since_role(\"documenter\") >= 10"
        );
        assert_eq!(
            n("task_marked_ready_to_complete"),
            "task_marked_ready_to_complete"
        );
    }

    #[test]
    fn keywords_become_operators() {
        assert_eq!(
            n("not last_iteration_failed and branch_commits > 2 or files_changed == 0"),
            "! last_iteration_failed && branch_commits > 2 || files_changed == 0"
        );
        // Words that merely contain a keyword stay whole.
        assert_eq!(n("android or notes"), "android || notes");
    }

    #[test]
    fn quotes_inside_strings_survive() {
        assert_eq!(n(r#"task_title == 'it"s'"#), r#"task_title == "it\"s""#);
        assert_eq!(n(r"task_title == 'it\'s'"), r#"task_title == "it's""#);
        assert_eq!(
            n(r#"task_title == "say \"hi\"""#),
            r#"task_title == "say \"hi\"""#
        );
        assert_eq!(
            n(r"task_title == 'back\\slash'"),
            r#"task_title == "back\\slash""#
        );
        assert_eq!(
            n("task_title contains 'a and b'"),
            "contains(task_title, \"a and b\")"
        );
    }

    #[test]
    fn infix_operands_may_be_groups_and_calls() {
        assert_eq!(
            n("(task_title) contains ('x')"),
            "contains((task_title), (\"x\"))"
        );
        assert_eq!(
            n("not task_title contains 'wip' and task_id starts_with 'A.'"),
            "! contains(task_title, \"wip\") && starts_with(task_id, \"A.\")"
        );
        assert_eq!(
            n("task_title matches '^fix'"),
            "matches(task_title, \"^fix\")"
        );
        assert_eq!(
            n("contains(task_title, 'x')"),
            "contains(task_title, \"x\")"
        );
    }

    #[test]
    fn broken_input_is_reported() {
        assert_eq!(
            normalize("task_title == 'open").unwrap_err(),
            "unterminated string starting at column 15"
        );
        assert_eq!(
            normalize("contains 'x'").unwrap_err(),
            "`contains` needs a value on its left"
        );
        assert_eq!(
            normalize("task_title contains").unwrap_err(),
            "`contains` needs a value on its right"
        );
    }
}
