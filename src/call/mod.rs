//! The provider-neutral values that flow between pipeline stages: a call the
//! model made, a call that could not be read, and the result of running one.

mod arguments;
mod values;

pub use arguments::{Arguments, SentArguments};
pub use values::{
    CACHE_WRITE_FACTOR, EarlyCall, ErrorKind, Failure, FunctionSpec, Image, MalformedCall,
    ParsedCall, Party, Prices, Reason, StreamTiming, ToolCall, ToolResult, Usage,
};
