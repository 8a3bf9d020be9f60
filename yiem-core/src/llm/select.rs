//! [`model_from_env`]: which model a program (the `yiem chat` command, the examples) talks to, read
//! from the environment. Offline by default: nothing is sent anywhere unless the environment asks.
//!
//! | variable | meaning |
//! |---|---|
//! | `YIEM_PROVIDER` | `openai`, `openai-responses`, `anthropic`, `gemini`, or `offline`; unset: `openai` when `YIEM_BASE_URL` is set, else offline |
//! | `YIEM_MODEL` | the model name (defaults: `gpt-4o-mini`, `gpt-5-mini` for `openai-responses`, `claude-sonnet-4-5`, `gemini-2.5-flash`) |
//! | `YIEM_BASE_URL`, `OPENAI_API_KEY` | the OpenAI-compatible endpoint (required for `openai`; for `openai-responses`, OpenAI's API when unset) and its key (optional; required at OpenAI's API) |
//! | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` | Anthropic's key (required) and another base URL (optional) |
//! | `GEMINI_API_KEY`, `GEMINI_BASE_URL` | Gemini's key (required) and another base URL (optional) |
//!
//! An API key alone never turns a program online: many shells carry keys for other tools.

use std::sync::Arc;

use super::Model;
use super::transport::config::ConfigError;
use crate::dialect::Dialect;

/// The model the environment chose.
#[derive(Clone)]
#[non_exhaustive]
pub struct SelectedModel {
    /// The model.
    pub model: Arc<dyn Model>,
    /// What it is, for people: `claude-sonnet-4-5 at https://api.anthropic.com/v1/messages`.
    pub description: String,
    /// The dialect its tools are sent in (a program can leave out tools that cannot be described in it).
    pub dialect: Dialect,
}

impl std::fmt::Debug for SelectedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectedModel")
            .field("description", &self.description)
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

/// The variable that names the provider.
pub const PROVIDER_ENV: &str = "YIEM_PROVIDER";

/// The providers this build has, as `YIEM_PROVIDER` names them.
pub const PROVIDERS: &[&str] = &[
    #[cfg(feature = "openai")]
    "openai",
    #[cfg(feature = "openai-responses")]
    "openai-responses",
    #[cfg(feature = "anthropic")]
    "anthropic",
    #[cfg(feature = "gemini")]
    "gemini",
];

/// The model the environment names, with a line saying what it is and the dialect of its tools, or
/// `None` for offline. A provider that is named but
/// misconfigured (no key, a bad URL, not in this build) is an error saying what to set.
///
/// ```
/// # #[cfg(feature = "anthropic")] {
/// use yiem_core::llm::model_from_lookup;
///
/// let offline = model_from_lookup(|_| None).unwrap();
/// assert!(offline.is_none());
///
/// let selected = model_from_lookup(|name| match name {
///     "YIEM_PROVIDER" => Some("anthropic".into()),
///     "ANTHROPIC_API_KEY" => Some("sk-ant-test".into()),
///     _ => None,
/// })
/// .unwrap()
/// .unwrap();
/// assert_eq!(selected.model.name(), "claude-sonnet-4-5");
/// assert_eq!(selected.description, "claude-sonnet-4-5 at https://api.anthropic.com/v1/messages");
/// assert_eq!(selected.dialect, yiem_core::store::Dialect::Anthropic);
///
/// let error = model_from_lookup(|name| (name == "YIEM_PROVIDER").then(|| "anthropic".into()))
///     .err()
///     .unwrap();
/// assert_eq!(error.to_string(), "`ANTHROPIC_API_KEY` is not set: set it to your API key");
/// # }
/// ```
pub fn model_from_env() -> Result<Option<SelectedModel>, ConfigError> {
    model_from_lookup(|name| std::env::var(name).ok())
}

/// Like [`model_from_env`], reading the variables through `lookup`.
pub fn model_from_lookup(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<SelectedModel>, ConfigError> {
    let var = |name: &str| {
        lookup(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let provider = match var(PROVIDER_ENV) {
        Some(provider) => provider.to_ascii_lowercase(),
        None if var("YIEM_BASE_URL").is_some() => "openai".to_owned(),
        None => return Ok(None),
    };
    let model_name = var("YIEM_MODEL");
    // A key (required) and a base URL (optional) from the provider's own variables.
    #[cfg(any(feature = "anthropic", feature = "gemini"))]
    let keyed = |key: &'static str, url: &str| {
        var(key)
            .map(|found| (found, var(url)))
            .ok_or(ConfigError::MissingApiKey { variable: key })
    };
    match provider.as_str() {
        "offline" | "scripted" | "none" => Ok(None),
        #[cfg(feature = "openai")]
        "openai" => {
            let model = super::OpenAiModel::new(super::OpenAiConfig::from_lookup(&lookup)?)?;
            let endpoint = model.endpoint().to_owned();
            Ok(Some(selected(model, &endpoint, "", Dialect::OpenAi)))
        }
        #[cfg(feature = "openai-responses")]
        "openai-responses" => {
            let config = super::OpenAiResponsesConfig::from_lookup(&lookup)?;
            let model = super::OpenAiResponsesModel::new(config)?;
            let endpoint = model.endpoint().to_owned();
            Ok(Some(selected(
                model,
                &endpoint,
                " (Responses API)",
                Dialect::OpenAi,
            )))
        }
        #[cfg(feature = "anthropic")]
        "anthropic" => {
            let (key, url) = keyed("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")?;
            let name = model_name.unwrap_or_else(|| "claude-sonnet-4-5".into());
            let mut config = super::AnthropicConfig::new(key, name);
            if let Some(url) = url {
                config = config.base_url(url);
            }
            let model = super::AnthropicModel::new(config)?;
            let endpoint = model.endpoint().to_owned();
            Ok(Some(selected(model, &endpoint, "", Dialect::Anthropic)))
        }
        #[cfg(feature = "gemini")]
        "gemini" => {
            let (key, url) = keyed("GEMINI_API_KEY", "GEMINI_BASE_URL")?;
            let name = model_name.unwrap_or_else(|| "gemini-2.5-flash".into());
            let mut config = super::GeminiConfig::new(key, name);
            if let Some(url) = url {
                config = config.base_url(url);
            }
            let model = super::GeminiModel::new(config)?;
            let endpoint = model.endpoint().to_owned();
            Ok(Some(selected(model, &endpoint, "", Dialect::Gemini)))
        }
        _ => {
            let _ = model_name;
            Err(ConfigError::UnknownProvider {
                name: provider,
                known: PROVIDERS.join(", "),
            })
        }
    }
}

/// `model`, described as `<name> at <endpoint><note>`, whose tools go in `dialect`.
fn selected(
    model: impl Model + 'static,
    endpoint: &str,
    note: &str,
    dialect: Dialect,
) -> SelectedModel {
    SelectedModel {
        description: format!("{} at {endpoint}{note}", model.name()),
        model: Arc::new(model),
        dialect,
    }
}
