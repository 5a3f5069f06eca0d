//! Markdown tables, written in one place (hyperfine's `export/markup.rs`
//! is the model): a header of columns, each aligned left or right, and
//! rows of cells, a `|` in a cell escaped so it cannot split the row.

use std::fmt::Write as _;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// A Markdown table being built.
#[derive(Debug, Clone)]
pub struct Table {
    text: String,
    columns: usize,
}

impl Table {
    /// A table with these columns and no row yet.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        let mut text = String::new();
        for (name, _) in columns {
            let _ = write!(text, "| {} ", escape(name));
        }
        text.push_str("|\n");
        for (_, align) in columns {
            text.push_str(match align {
                Align::Left => "|---",
                Align::Right => "|---:",
            });
        }
        text.push_str("|\n");
        Table {
            text,
            columns: columns.len(),
        }
    }

    /// Add a row; it must have a cell per column.
    pub fn row<I>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator,
        I::Item: std::fmt::Display,
    {
        let mut count = 0;
        for cell in cells {
            let _ = write!(self.text, "| {} ", escape(&cell.to_string()));
            count += 1;
        }
        debug_assert_eq!(count, self.columns, "a row needs a cell per column");
        self.text.push_str("|\n");
        self
    }

    /// The table's Markdown, ending with a newline.
    pub fn render(&self) -> String {
        self.text.clone()
    }

    pub fn into_string(self) -> String {
        self.text
    }
}

/// A cell's text, its `|` escaped.
fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('|') {
        std::borrow::Cow::Owned(text.replace('|', "\\|"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_has_its_header_alignment_and_rows() {
        let mut table = Table::new(&[("model", Align::Left), ("trials", Align::Right)]);
        table.row(["gpt", "20"]).row(["mock", "3"]);
        assert_eq!(
            table.into_string(),
            "| model | trials |\n|---|---:|\n| gpt | 20 |\n| mock | 3 |\n"
        );
    }

    #[test]
    fn a_pipe_in_a_cell_cannot_split_its_row() {
        let mut table = Table::new(&[("scenario", Align::Left)]);
        table.row(["a|b"]);
        assert!(
            table.render().ends_with("| a\\|b |\n"),
            "{}",
            table.render()
        );
    }
}
