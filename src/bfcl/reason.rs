//! Why a call does not match, in BFCL's words: its error types
//! (`wrong_count`, `value_error:string`, ...), and the parameter a
//! mismatch is about.

/// Why a turn's calls do not match, in BFCL's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    WrongCount,
    WrongFuncName,
    MissingRequired,
    UnexpectedParam,
    MissingOptional,
    TypeError,
    ValueString,
    ValueList,
    ValueDict,
    ValueOthers,
    CannotFindMatch,
    /// A call whose arguments could not be read at all.
    DecoderFailed,
}

impl Reason {
    pub const ALL: [Reason; 12] = [
        Reason::WrongCount,
        Reason::WrongFuncName,
        Reason::MissingRequired,
        Reason::UnexpectedParam,
        Reason::MissingOptional,
        Reason::TypeError,
        Reason::ValueString,
        Reason::ValueList,
        Reason::ValueDict,
        Reason::ValueOthers,
        Reason::CannotFindMatch,
        Reason::DecoderFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::WrongCount => "wrong_count",
            Reason::WrongFuncName => "wrong_func_name",
            Reason::MissingRequired => "missing_required",
            Reason::UnexpectedParam => "unexpected_param",
            Reason::MissingOptional => "missing_optional",
            Reason::TypeError => "type_error",
            Reason::ValueString => "value_error:string",
            Reason::ValueList => "value_error:list",
            Reason::ValueDict => "value_error:dict",
            Reason::ValueOthers => "value_error:others",
            Reason::CannotFindMatch => "cannot_find_match",
            Reason::DecoderFailed => "decoder_failed",
        }
    }

    pub fn parse(text: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// A call that does not match: BFCL's reason, and the parameter it is
/// about (the first wrong one in the order the model wrote them, as BFCL
/// reports it), when it is about one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub reason: Reason,
    pub parameter: Option<String>,
}

impl From<Reason> for Mismatch {
    fn from(reason: Reason) -> Mismatch {
        Mismatch {
            reason,
            parameter: None,
        }
    }
}
