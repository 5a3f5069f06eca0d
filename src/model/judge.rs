//! The judge the user names for a run (`run --judge-model FILE`): an
//! OpenAI-compatible chat model that a server that judges (`"judge":
//! true`, tau2's bridge) calls itself. It is given the endpoint, the model
//! and the key the file names, in its environment, and nothing else is.

use super::live::api_key;
use super::{ModelError, ModelFile, ModelKind};
use crate::pointer::Pointer;
use crate::provider::Provider;
use crate::tool::mcp::JudgeEnv;

/// The public OpenAI endpoint, for a judge file that names no base_url.
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment a judging server gets for `file`, judging each
/// conversation `repeats` times.
pub fn judge_env(file: &ModelFile, repeats: u32) -> Result<JudgeEnv, ModelError> {
    let invalid = |pointer: Pointer, problem: &str| ModelError::Judge {
        name: file.name.clone(),
        pointer,
        problem: problem.to_owned(),
    };
    let api = match (file.kind(), file.api()) {
        (ModelKind::Live(Provider::OpenAi), Some(api)) => api,
        _ => {
            return Err(invalid(
                Pointer::root().key("kind"),
                "a judge is an OpenAI-compatible chat model: kind \"openai\"",
            ));
        }
    };
    let key = api_key(api).map_err(|missing| ModelError::Connect {
        name: file.name.clone(),
        problem: missing.to_string(),
    })?;
    let mut env = vec![
        (
            "TOOLGAUGE_JUDGE_BASE_URL".to_owned(),
            api.base_url.clone().unwrap_or(OPENAI_BASE_URL.to_owned()),
        ),
        ("TOOLGAUGE_JUDGE_MODEL".to_owned(), api.model.clone()),
        (
            "TOOLGAUGE_JUDGE_REPEATS".to_owned(),
            repeats.max(1).to_string(),
        ),
    ];
    if let Some(key) = key {
        env.push((
            "TOOLGAUGE_JUDGE_API_KEY".to_owned(),
            key.expose().to_owned(),
        ));
    }
    Ok(JudgeEnv(env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: serde_json::Value) -> ModelFile {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_judge_gets_its_endpoint_model_and_repeats_and_never_shows_its_key() {
        let judge = file(serde_json::json!({
            "name": "judge", "kind": "openai",
            "api": {"model": "qwen", "base_url": "http://127.0.0.1:9/v1"}
        }));
        let env = judge_env(&judge, 3).unwrap();
        let names: Vec<&str> = env.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "TOOLGAUGE_JUDGE_BASE_URL",
                "TOOLGAUGE_JUDGE_MODEL",
                "TOOLGAUGE_JUDGE_REPEATS"
            ]
        );
        assert_eq!(env.0[0].1, "http://127.0.0.1:9/v1");
        assert_eq!(env.0[2].1, "3");
        // Debug names the variables, never their values.
        assert!(!format!("{env:?}").contains("127.0.0.1"));
    }

    #[test]
    fn a_judge_that_is_not_an_openai_chat_model_is_refused_naming_the_field() {
        let mock = file(serde_json::json!({"name": "m", "kind": "scripted"}));
        let err = judge_env(&mock, 1).unwrap_err().to_string();
        assert!(err.contains("/kind") && err.contains("openai"), "{err}");
    }
}
