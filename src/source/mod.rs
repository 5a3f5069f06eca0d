//! Reading JSON input files, with errors that say where the problem is:
//! the file, the line and column, and the JSON pointer of the bad value.

mod locate;
mod read;

pub use locate::locate;
pub use read::{
    FileError, INPUT_LIMIT, from_value, in_json_words, open_in_run_folder, open_input,
    open_run_file, parse_json, read_input, read_input_text, read_json,
};
