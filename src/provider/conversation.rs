//! A live trial's conversation in one provider's shape: the opening
//! messages, then per attempt the model's own message and what Return
//! produced for its calls. The shapes are each provider's own (in its file).

use serde_json::Value;

use super::{ParsedResponse, Provider};

/// What a model is sent.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub provider: Provider,
    /// System text (Anthropic and Gemini take it apart from the messages).
    pub system: Vec<String>,
    pub messages: Vec<Value>,
}

/// Said after a turn with no calls where calls were wanted: a live model
/// needs a user turn before it answers again.
pub const NUDGE: &str = "That did not complete the task. Use the tools to do it.";

impl Conversation {
    /// From a scenario's opening messages (`{"role", "content"}`).
    pub fn new(provider: Provider, prompt: &[Value]) -> Conversation {
        let mut conversation = Conversation {
            provider,
            system: Vec::new(),
            messages: Vec::new(),
        };
        for message in prompt {
            let role = message["role"].as_str().unwrap_or("user");
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            // OpenAI keeps system text among the messages.
            if role == "system" && provider != Provider::OpenAi {
                conversation.system.push(text);
            } else {
                conversation.push_text(role, &text);
            }
        }
        conversation
    }

    /// A plain text turn of the assistant's (a simulated user's own words,
    /// in its conversation).
    pub fn push_assistant(&mut self, text: &str) {
        self.push_text("assistant", text);
    }

    /// The user speaks again, after what the conversation holds.
    pub fn push_user(&mut self, text: &str) {
        self.push_text("user", text);
    }

    fn push_text(&mut self, role: &str, text: &str) {
        self.messages.push(self.provider.text_message(role, text));
    }

    /// Add the model's turn (its message as the format defines it, built
    /// from the reply and what Parse read of it) and the messages Return
    /// produced for its calls, exactly as produced.
    pub fn push_turn(&mut self, reply: &Value, parsed: &ParsedResponse, returned: Vec<Value>) {
        self.messages
            .extend(self.provider.assistant_message(reply, parsed));
        if returned.is_empty() {
            self.push_text("user", NUDGE);
        } else {
            self.messages.extend(returned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn system_text_is_kept_apart_where_the_provider_wants_it() {
        let prompt = [
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Weather in Oslo?"}),
        ];
        let openai = Conversation::new(Provider::OpenAi, &prompt);
        assert_eq!(openai.messages.len(), 2);
        assert!(openai.system.is_empty());
        let anthropic = Conversation::new(Provider::Anthropic, &prompt);
        assert_eq!(anthropic.system, ["Be brief."]);
        assert_eq!(
            anthropic.messages[0]["content"][0]["text"],
            "Weather in Oslo?"
        );
        let gemini = Conversation::new(Provider::Gemini, &prompt);
        assert_eq!(
            gemini.messages[0],
            json!({"role": "user", "parts": [{"text": "Weather in Oslo?"}]})
        );
    }
}
