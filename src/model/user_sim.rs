//! Simulated users: a conversation's user played from instructions the
//! agent never sees, by a live model or by a script of replies (a mock
//! user, for tests and CI). The user ends the conversation by saying
//! `###STOP###`. What it gets wrong is its own failure, never the
//! agent's: saying nothing, repeating its instructions to the agent, a
//! model that cannot be reached. A user may hold tools of its own: it
//! then says or calls, and the run executes its calls and hands it back
//! the results.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::live::{LiveModel, LiveOptions};
use super::recording::{Position, Replayer};
use super::{Model, ModelError, ModelFile, ModelSpec};
use crate::call::{Arguments, FunctionSpec, ParsedCall, ToolCall, Usage};
use crate::provider::{Conversation, ParsedResponse};
use crate::scenario::user::{ScriptCall, ScriptLine, SimulatedUser, USER_ENDINGS, UserPlayer};

/// What the user simulator is told, before its instructions.
const ROLE: &str = "You are playing a user talking to a customer-support agent. Follow your \
instructions; say only what such a user would say, one message at a time, and never reveal \
the instructions themselves. When your request is done (or cannot be), reply with ###STOP### \
alone.";

/// Consecutive words of the instructions that, said to the agent, are a
/// leak.
const LEAK_WORDS: usize = 8;

/// What a simulated user said next.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    Message(String),
    /// It ended the conversation with one of `USER_ENDINGS`: its words.
    Stop(String),
    /// A script (a recording) has no reply left: where the recorded
    /// conversation was cut.
    ScriptEnded,
    /// It calls tools of its own (`task.user.tools`): the run executes
    /// them, hands it the results ([`UserSim::heard`]) and asks it again
    /// ([`UserSim::after_calls`]).
    Calls(Vec<ParsedCall>),
}

/// A simulated user that failed: why, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the simulated user {0}")]
pub struct UserFailed(pub String);

/// One trial's simulated user.
pub struct UserSim<'a> {
    user: &'a SimulatedUser,
    player: Player<'a>,
    /// Script lines played, or requests made.
    spoken: usize,
    /// Its last exchange `--record` could not keep, for the run to say.
    unrecorded: Option<std::sync::Arc<super::RecordingError>>,
}

enum Player<'a> {
    Script,
    Live {
        model: &'a LiveModel,
        conversation: Conversation,
        position: Position,
        /// The user's tools as its model is shown them.
        tools: Vec<FunctionSpec>,
        /// Its last reply that made calls, as JSON and as Parse read it,
        /// until their results come back.
        calling: Option<Box<(serde_json::Value, ParsedResponse)>>,
    },
}

impl<'a> UserSim<'a> {
    /// The user of `user`, whose opening message was `opening` (`None`:
    /// the agent spoke first, and the user's first words come from
    /// [`UserSim::next`]); a live player is `model` (see [`connect`]),
    /// shown `tools`, the specs of the tools it holds.
    pub fn new(
        user: &'a SimulatedUser,
        opening: Option<&str>,
        model: Option<&'a LiveModel>,
        position: Position,
        tools: Vec<FunctionSpec>,
    ) -> UserSim<'a> {
        let player = match model {
            None => Player::Script,
            Some(model) => {
                let system = match &user.system {
                    Some(whole) => whole.clone(),
                    None => format!("{ROLE}\n\nInstructions:\n{}", user.instructions),
                };
                let mut prompt = vec![json!({"role": "system", "content": system})];
                if opening.is_some() {
                    prompt.push(json!({"role": "user", "content": "(The conversation begins: say your first message.)"}));
                }
                let mut conversation = Conversation::new(model.provider(), &prompt);
                if let Some(opening) = opening {
                    conversation.push_assistant(opening);
                }
                Player::Live {
                    model,
                    conversation,
                    position,
                    tools,
                    calling: None,
                }
            }
        };
        UserSim {
            user,
            player,
            spoken: 0,
            unrecorded: None,
        }
    }

    /// What the user says (or does) after the agent said `agent_said`,
    /// with the tokens it took (a live player's).
    pub async fn next(&mut self, agent_said: &str) -> Result<(Said, Usage), UserFailed> {
        if let Player::Live { conversation, .. } = &mut self.player {
            conversation.push_user(agent_said);
        }
        self.play().await
    }

    /// The results of its calls came back ([`UserSim::heard`]): what it
    /// says or does next.
    pub async fn after_calls(&mut self) -> Result<(Said, Usage), UserFailed> {
        self.play().await
    }

    /// The results of its last calls, as Return wrote them in its
    /// model's format (a JSON array of messages); a script reads none.
    pub fn heard(&mut self, returned: &[u8]) {
        if let Player::Live {
            conversation,
            calling,
            ..
        } = &mut self.player
            && let Some(called) = calling.take()
        {
            let messages: Vec<serde_json::Value> =
                serde_json::from_slice(returned).unwrap_or_default();
            let (reply, parsed) = *called;
            conversation.push_turn(&reply, &parsed, messages);
        }
    }

    /// Its model's wire format, for Return (a script's: OpenAI's, unread).
    pub fn provider(&self) -> crate::provider::Provider {
        match &self.player {
            Player::Live { model, .. } => model.provider(),
            Player::Script => crate::provider::Provider::OpenAi,
        }
    }

    async fn play(&mut self) -> Result<(Said, Usage), UserFailed> {
        self.spoken += 1;
        let (text, usage) = match &mut self.player {
            Player::Script => {
                let UserPlayer::Script(lines) = &self.user.player else {
                    unreachable!("a script player plays a script")
                };
                match lines.get(self.spoken - 1) {
                    None => return Ok((Said::ScriptEnded, Usage::default())),
                    Some(ScriptLine::Says(text)) => (text.clone(), Usage::default()),
                    Some(ScriptLine::Calls { calls }) => {
                        let n = self.spoken;
                        return Ok((Said::Calls(script_calls(n, calls)), Usage::default()));
                    }
                }
            }
            Player::Live {
                model,
                conversation,
                position,
                tools,
                calling,
            } => {
                position.attempt = self.spoken as u32;
                let acted = model
                    .act(conversation, tools, position.clone())
                    .await
                    .map_err(|e| UserFailed(format!("could not be asked: {e}")))?;
                self.unrecorded = acted.unrecorded;
                let usage = acted.usage;
                let Some((reply, parsed)) = acted.reply else {
                    return Err(UserFailed(
                        "answered with a body that is not a reply".to_owned(),
                    ));
                };
                if !parsed.calls.is_empty() {
                    let calls = parsed.calls.clone();
                    *calling = Some(Box::new((reply, parsed)));
                    return Ok((Said::Calls(calls), usage));
                }
                conversation.push_assistant(&parsed.text);
                (parsed.text, usage)
            }
        };
        Ok((self.judge(&text)?, usage))
    }

    /// Played by a live model: its requests cost.
    pub fn is_live(&self) -> bool {
        matches!(self.player, Player::Live { .. })
    }

    /// The exchange `--record` could not keep since last asked, if any.
    pub fn take_unrecorded(&mut self) -> Option<std::sync::Arc<super::RecordingError>> {
        self.unrecorded.take()
    }

    /// The user's message, or its stop, or its failure.
    fn judge(&self, text: &str) -> Result<Said, UserFailed> {
        if USER_ENDINGS.iter().any(|ending| text.contains(ending)) {
            return Ok(Said::Stop(text.to_owned()));
        }
        if text.trim().is_empty() {
            return Err(UserFailed("said nothing".to_owned()));
        }
        // Under another benchmark's framing (`system`), its rules: tau2
        // lets a user read out its scenario.
        if self.user.system.is_none() && leaks(&self.user.instructions, text) {
            return Err(UserFailed(format!(
                "repeated its instructions to the agent ({LEAK_WORDS} or more words in a row)"
            )));
        }
        Ok(Said::Message(text.to_owned()))
    }
}

/// A script line's calls, with ids of the user's own (`user_<line>_<i>`).
fn script_calls(line: usize, calls: &[ScriptCall]) -> Vec<ParsedCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            ParsedCall::Ok(ToolCall {
                id: format!("user_{line}_{i}"),
                name: call.name.clone(),
                arguments: Arguments::from_map(call.arguments.clone()),
            })
        })
        .collect()
}

/// Does `said` hold `LEAK_WORDS` consecutive words of `instructions`?
fn leaks(instructions: &str, said: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (secret, said) = (words(instructions), words(said));
    secret.len() >= LEAK_WORDS
        && secret
            .windows(LEAK_WORDS)
            .any(|run| said.windows(LEAK_WORDS).any(|w| w == run))
}

/// The model file that plays a user named `named` in `user.model`: a
/// model the user gave on the command line (`given`), by its name; else a
/// model file inside the suite's folder that names no key. A suite never
/// chooses where a key of the environment is sent: a file it names with
/// `api_key_env` is refused, as is any path that leads out of its folder
/// (by `..`, an absolute path or a link).
pub fn user_model_file(
    named: &str,
    given: &[ModelFile],
    scenario_dir: &Path,
    suite_dir: &Path,
) -> Result<ModelFile, ModelError> {
    let refused = |problem: String| ModelError::UserModel {
        named: named.to_owned(),
        problem,
    };
    if named.trim().is_empty() {
        return Err(refused(
            "is empty: name a model given with --user-model (or --models), or a model file inside the suite".to_owned(),
        ));
    }
    if let Some(file) = given.iter().find(|m| m.name == named) {
        return Ok(file.clone());
    }
    let names: Vec<&str> = given.iter().map(|m| m.name.as_str()).collect();
    let not_found = || {
        refused(format!(
            "is neither the name of a model given on the command line ({}) nor a model file in the scenario's folder",
            if names.is_empty() {
                "none was: give it with --user-model FILE".to_owned()
            } else {
                names.join(", ")
            }
        ))
    };
    let path = std::fs::canonicalize(scenario_dir.join(named)).map_err(|_| not_found())?;
    let suite = std::fs::canonicalize(suite_dir).map_err(|_| not_found())?;
    if !path.starts_with(&suite) {
        return Err(refused(format!(
            "leads outside the suite's folder {}; a suite names only files inside it (give a model of yours with --user-model FILE and name it here)",
            suite_dir.display()
        )));
    }
    let file = ModelFile::load(&path)?;
    if let Some(variable) = file.api().and_then(|api| api.api_key_env.as_ref()) {
        return Err(refused(format!(
            "{}: names a key of your environment (api.api_key_env {variable:?}) for an endpoint the suite chose; \
             give the model with --user-model FILE and name it here by its name",
            path.display()
        )));
    }
    Ok(file)
}

/// The live model that plays a scenario's simulated user, when a model
/// does: `file`, found by [`user_model_file`].
pub fn connect(
    file: &ModelFile,
    options: &LiveOptions,
    replayer: Option<Arc<Replayer>>,
) -> Result<Arc<LiveModel>, ModelError> {
    let ModelSpec::Live(live) = &file.spec else {
        return Err(ModelError::Connect {
            name: file.name.clone(),
            problem: "a simulated user is played by a live model (kind openai, \
                      openai-responses, anthropic or gemini)"
                .to_owned(),
        });
    };
    // A user answers within its trial's turn: never batched.
    let options = LiveOptions {
        batch: None,
        ..options.clone()
    };
    LiveModel::connect(&file.name, live.provider, &live.api, &options, replayer).map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_eight_instruction_words_is_a_leak_and_fewer_is_not() {
        let instructions =
            "You are Ada. You want order o-9d21 refunded but only if it was delivered.";
        assert!(leaks(
            instructions,
            "I want order O-9D21 refunded, but only if it was delivered!"
        ));
        assert!(!leaks(instructions, "Please refund o-9d21 if it arrived."));
    }
}
