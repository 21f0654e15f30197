//! Each tool's wording for its failures: auth, usage limits, permissions.
//! Patterns are checked against evidence lines only (see `transcript`).

use super::class::FailureClass;
use super::preset::Preset;

/// When a pattern applies.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum When {
    /// Only when the run otherwise looks failed (a non-zero exit or an
    /// error result): tools print transient retries on the way to success.
    Failed,
    /// Even after a clean exit: the tool exits 0 on this failure.
    Always,
}

pub(crate) type Rule = (FailureClass, When, &'static str);

/// Each tool's wording for its failures, checked in order, case-insensitive,
/// against the evidence lines only.
pub(crate) fn rules(dialect: Preset) -> &'static [Rule] {
    use FailureClass::{Auth, Permission, UsageLimit};
    use When::{Always, Failed};
    match dialect {
        Preset::Claude => &[
            (
                UsageLimit,
                Failed,
                r"usage limit reached|you've hit your (usage )?limit|limit reached ∙ resets|(5-hour|weekly|session|opus) limit reached|out of (extra )?usage|rate_limit_error|exceed your account's rate limit|api error: (request rejected \()?429|credit balance is too low",
            ),
            (
                Auth,
                Failed,
                r"not logged in|invalid api key|please run /login|oauth token (has )?(expired|revoked)|authentication_error|api error: 401",
            ),
            (
                Permission,
                Failed,
                r"cannot be used with root/sudo|permission denied|permission to use \S+ (was|has been) denied",
            ),
        ],
        Preset::Codex => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|rate limit|429 too many requests|quota exceeded|insufficient_quota",
            ),
            (
                Auth,
                Failed,
                r"not logged in|401 unauthorized|invalid api key|incorrect api key|please (re-?)?log ?in|token (has )?expired|refresh token",
            ),
            (
                Permission,
                Failed,
                r"permission denied|approval (was )?denied",
            ),
        ],
        Preset::Opencode => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|rate limit|\b429\b|quota|insufficient_quota|credit balance",
            ),
            (
                Auth,
                Failed,
                r"providerautherror|\b401\b|unauthorized|invalid api key|not logged in|no api key",
            ),
            (Permission, Failed, r"permission denied|permission rejected"),
        ],
        Preset::Amp => &[
            (
                Auth,
                Always,
                r"login flow|log in to amp|paste (the|your) (code|token)|authorization code|not logged in|amp_api_key|invalid (or missing )?api key|run 'amp login'|\b401\b|unauthorized",
            ),
            (
                UsageLimit,
                Failed,
                r"out of (free )?credits|insufficient (credits|balance)|usage limit|rate limit|\b429\b|quota",
            ),
            (Permission, Failed, r"permission denied"),
        ],
        Preset::Gemini | Preset::Qwen => &[
            (
                UsageLimit,
                Failed,
                r"quota exceeded|exceeded your current quota|exhausted your (daily )?quota|resource_exhausted|rate limit|\b429\b|too many requests|usage limit",
            ),
            (
                Auth,
                Failed,
                r"please set an auth method|auth method|no auth type is selected|configure an auth type|api key not valid|invalid api key|unauthenticated|\b401\b|login required|failed to log ?in|oauth",
            ),
            (
                Permission,
                Failed,
                r"permission_denied|permission denied|\b403\b",
            ),
        ],
        Preset::Aider => &[
            (
                Auth,
                Always,
                r"(?m)^(litellm\.)?authenticationerror|not able to authenticate you|no llm model was specified and no api keys were provided|authentication with openrouter failed",
            ),
            (
                UsageLimit,
                Always,
                r"(?m)^(litellm\.)?\w*error:.*(insufficient_quota|exceeded your current quota|credit balance is too low)",
            ),
            (UsageLimit, Failed, r"(?m)^(litellm\.)?ratelimiterror"),
        ],
        Preset::Cursor => &[
            (
                UsageLimit,
                Failed,
                r"usage limit|hit your limit|rate limit|\b429\b|quota|out of (fast )?requests",
            ),
            (
                Auth,
                Failed,
                r"authentication required|not authenticated|cursor-agent login|cursor_api_key|unauthorized|\b401\b",
            ),
            (Permission, Failed, r"permission denied|not trusted"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for preset in Preset::ALL {
            for (_, _, pattern) in rules(preset) {
                regex::Regex::new(&format!("(?i){pattern}")).unwrap();
            }
        }
    }
}
