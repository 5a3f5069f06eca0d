//! The GenAI semantic conventions' names, in the version a run emits:
//! v1.36.0 by default, the latest toolgauge knows (v1.41.0) when
//! `OTEL_SEMCONV_STABILITY_OPT_IN` holds `gen_ai_latest_experimental`, as
//! the conventions ask of instrumentations.

/// Which version of the GenAI conventions the spans follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semconv {
    /// v1.36.0: the provider as `gen_ai.system`; message content as
    /// span events.
    V1_36,
    /// v1.41.0: the provider as `gen_ai.provider.name`; content as the
    /// `gen_ai.input.messages`, `gen_ai.output.messages`,
    /// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`
    /// attributes.
    Latest,
}

impl Semconv {
    /// The version `OTEL_SEMCONV_STABILITY_OPT_IN`'s value asks for.
    pub fn from_opt_in(value: Option<&str>) -> Semconv {
        let latest = value.is_some_and(|v| {
            v.split(',')
                .any(|item| item.trim() == "gen_ai_latest_experimental")
        });
        if latest {
            Semconv::Latest
        } else {
            Semconv::V1_36
        }
    }

    /// The schema URL of the version.
    pub fn schema_url(self) -> &'static str {
        match self {
            Semconv::V1_36 => "https://opentelemetry.io/schemas/1.36.0",
            Semconv::Latest => "https://opentelemetry.io/schemas/1.41.0",
        }
    }

    /// The attribute that names the model's provider.
    pub fn provider_key(self) -> &'static str {
        match self {
            Semconv::V1_36 => "gen_ai.system",
            Semconv::Latest => "gen_ai.provider.name",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_conventions_only_when_opted_in() {
        assert_eq!(Semconv::from_opt_in(None), Semconv::V1_36);
        assert_eq!(Semconv::from_opt_in(Some("http")), Semconv::V1_36);
        assert_eq!(
            Semconv::from_opt_in(Some("http, gen_ai_latest_experimental")),
            Semconv::Latest
        );
        assert_eq!(Semconv::Latest.provider_key(), "gen_ai.provider.name");
    }
}
