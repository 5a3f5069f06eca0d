//! A streamed reply's pieces joined as they come: text said in pieces,
//! added to in place; Gemini's parts, where text streamed in pieces is
//! one text part again, and a Vertex call in `partialArgs` pieces (each
//! a JSON path and a value, a string piece added to while `willContinue`
//! says more is coming) is one call whole.

use serde_json::{Value, json};

/// A Gemini reply's parts so far, and the Vertex call still coming in
/// pieces (`willContinue`), with the string arguments still growing.
#[derive(Debug, Default)]
pub(super) struct GeminiParts {
    pub(super) parts: Vec<Value>,
    /// The part of the call that said `willContinue: true`.
    open: Option<usize>,
    /// Its arguments whose last piece said `willContinue: true`.
    growing: Vec<String>,
}

impl GeminiParts {
    /// Text streamed in pieces is one text part again; a call in Vertex
    /// pieces is one call; every other part (a whole call, a thought, a
    /// part with a signature) stays whole, in order.
    pub(super) fn add(&mut self, part: &Value) {
        let plain = |p: &Value| {
            p.as_object()
                .is_some_and(|o| o.len() == 1 && o.contains_key("text"))
        };
        if let Some(call) = part.get("functionCall").filter(|call| call.is_object()) {
            return self.add_call(part, call);
        }
        if plain(part)
            && let Some(last) = self.parts.last_mut().filter(|last| plain(last))
        {
            append(&mut last["text"], &part["text"]);
            return;
        }
        self.parts.push(part.clone());
    }

    fn add_call(&mut self, part: &Value, call: &Value) {
        // A piece of the open call: it names no other call.
        let continues = self.open.filter(|&at| {
            let open = &self.parts[at]["functionCall"];
            ["id", "name"]
                .iter()
                .all(|key| call[key].is_null() || call[key] == open[key])
        });
        let at = match continues {
            Some(at) => at,
            None => {
                let mut whole = part.clone();
                let fields = whole["functionCall"].as_object_mut().expect("an object");
                fields.remove("partialArgs");
                fields.remove("willContinue");
                fields.entry("args").or_insert_with(|| json!({}));
                self.parts.push(whole);
                self.growing.clear();
                self.parts.len() - 1
            }
        };
        let args = &mut self.parts[at]["functionCall"]["args"];
        if continues.is_some()
            && let Some(more) = call["args"].as_object()
            && let Some(args) = args.as_object_mut()
        {
            for (key, value) in more {
                args.insert(key.clone(), value.clone());
            }
        }
        for piece in call["partialArgs"].as_array().into_iter().flatten() {
            let path = piece["jsonPath"].as_str().unwrap_or("$");
            let value = ["stringValue", "numberValue", "boolValue"]
                .iter()
                .find_map(|key| piece.get(*key).cloned())
                .unwrap_or(Value::Null);
            let growing = self.growing.iter().any(|p| p == path);
            set_at_path(args, path, value, growing);
            self.growing.retain(|p| p != path);
            if piece["willContinue"] == true {
                self.growing.push(path.to_owned());
            }
        }
        self.open = (call["willContinue"] == true).then_some(at);
    }
}

/// Put `value` at a JSON path (`$.a.b[0]`, `$['a b']`), making the
/// objects and arrays on the way; a string still growing is added to.
fn set_at_path(root: &mut Value, path: &str, value: Value, growing: bool) {
    let mut target = root;
    for step in path_steps(path) {
        target = match step {
            Step::Key(key) => {
                if !target.is_object() {
                    *target = json!({});
                }
                target
                    .as_object_mut()
                    .expect("an object")
                    .entry(key)
                    .or_insert(Value::Null)
            }
            Step::Index(index) => {
                if !target.is_array() {
                    *target = json!([]);
                }
                let items = target.as_array_mut().expect("an array");
                // Pieces may come out of order, a few items apart; one
                // far past the end is the next item (gigabytes are not
                // laid out for it).
                let index = match index > items.len() + FAR {
                    true => items.len(),
                    false => index,
                };
                if items.len() <= index {
                    items.resize(index + 1, Value::Null);
                }
                &mut items[index]
            }
        };
    }
    match (growing, target.as_str(), value.as_str()) {
        (true, Some(sent), Some(more)) => *target = json!(format!("{sent}{more}")),
        _ => *target = value,
    }
}

/// How far past an array's end a piece's index may be and still be
/// that index.
const FAR: usize = 1024;

enum Step {
    Key(String),
    Index(usize),
}

/// The steps of an RFC 9535 path as Vertex writes them: `$`, then
/// `.name`, `['name']` or `[0]`.
fn path_steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            let inside = after[..end].trim();
            steps.push(match inside.parse::<usize>() {
                Ok(index) => Step::Index(index),
                Err(_) => Step::Key(inside.trim_matches(['\'', '"']).to_owned()),
            });
            rest = after.get(end + 1..).unwrap_or_default();
        } else {
            // Not a path Vertex writes: the rest is one key.
            steps.push(Step::Key(rest.to_owned()));
            break;
        }
    }
    steps
}

/// Add a streamed piece to a text said so far, in place: a long stream
/// costs its length, not its length squared.
pub(super) fn append(text: &mut Value, piece: &Value) {
    append_str(text, piece.as_str().unwrap_or_default());
}

pub(super) fn append_str(text: &mut Value, piece: &str) {
    match text {
        Value::String(sent) => sent.push_str(piece),
        other => *other = Value::String(piece.to_owned()),
    }
}
