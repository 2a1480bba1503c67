//! Python literals back into JSON: the inverse of [`python_repr`](super::python_repr), the
//! `repr()` of a parsed JSON body that the Python clients put in their error messages (`Error
//! code: 400 - {'error': {...}}`), so the model server can answer a recorded error with the very
//! body whose repr the client will print again (`docs/replay-and-fixtures.md` §11).
//!
//! The grammar is what such a repr holds: dicts, lists, strings in single or double quotes with
//! Python's escapes, `None`, `True`, `False`, ints and floats. Anything else is not a body.

use serde_json::{Map, Number, Value};

/// The JSON value whose Python repr is `text`, when `text` is exactly one such literal.
pub fn parse(text: &str) -> Option<Value> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        at: 0,
    };
    let value = parser.value()?;
    parser.skip_space();
    (parser.at == parser.chars.len()).then_some(value)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        let end = self.at + word.chars().count();
        if self
            .chars
            .get(self.at..end)
            .is_some_and(|s| s.iter().copied().eq(word.chars()))
        {
            self.at = end;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.skip_space();
        match self.peek()? {
            '{' => self.dict(),
            '[' => self.list(),
            '\'' | '"' => self.string().map(Value::String),
            _ if self.eat("None") => Some(Value::Null),
            _ if self.eat("True") => Some(Value::Bool(true)),
            _ if self.eat("False") => Some(Value::Bool(false)),
            _ => self.number(),
        }
    }

    /// The items of a `{…}` or `[…]` after its opening bracket, up to `close`.
    fn items(
        &mut self,
        close: char,
        mut item: impl FnMut(&mut Parser) -> Option<()>,
    ) -> Option<()> {
        self.skip_space();
        if self.peek() == Some(close) {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.skip_space();
            match self.next()? {
                ',' => continue,
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }

    fn dict(&mut self) -> Option<Value> {
        self.at += 1;
        let mut fields = Map::new();
        self.items('}', |parser| {
            parser.skip_space();
            let key = parser.string()?;
            parser.skip_space();
            (parser.next()? == ':').then_some(())?;
            let value = parser.value()?;
            fields.insert(key, value);
            Some(())
        })?;
        Some(Value::Object(fields))
    }

    fn list(&mut self) -> Option<Value> {
        self.at += 1;
        let mut items = Vec::new();
        self.items(']', |parser| {
            items.push(parser.value()?);
            Some(())
        })?;
        Some(Value::Array(items))
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.next().filter(|c| *c == '\'' || *c == '"')?;
        let mut out = String::new();
        loop {
            match self.next()? {
                c if c == quote => return Some(out),
                '\\' => match self.next()? {
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'x' => out.push(self.hex(2)?),
                    'u' => out.push(self.hex(4)?),
                    'U' => out.push(self.hex(8)?),
                    c @ ('\\' | '\'' | '"') => out.push(c),
                    _ => return None,
                },
                c => out.push(c),
            }
        }
    }

    fn hex(&mut self, digits: usize) -> Option<char> {
        let text: String = (0..digits).map(|_| self.next()).collect::<Option<_>>()?;
        char::from_u32(u32::from_str_radix(&text, 16).ok()?)
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.at += 1;
        }
        let text: String = self.chars[start..self.at].iter().collect();
        if let Ok(int) = text.parse::<i64>() {
            return Some(Value::Number(int.into()));
        }
        if let Ok(int) = text.parse::<u64>() {
            return Some(Value::Number(int.into()));
        }
        let float = text.parse::<f64>().ok()?;
        Number::from_f64(float).map(Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_reprs_of_json_bodies_and_nothing_else() {
        let table: Vec<(&str, Option<Value>)> = vec![
            (
                "{'error': {'message': \"This model's maximum context length is 8192 tokens\", 'type': 'invalid_request_error', 'param': None, 'code': None}}",
                Some(
                    json!({"error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error", "param": null, "code": null}}),
                ),
            ),
            (
                r"'tab\tnew\nline\\ \x7f \u200b \''",
                Some(json!("tab\tnew\nline\\ \u{7f} \u{200b} '")),
            ),
            (
                "[True, False, 1, -2, 1.5, 1e-05, []]",
                Some(json!([true, false, 1, -2, 1.5, 0.00001, []])),
            ),
            ("{}", Some(json!({}))),
            ("This model's maximum context length", None),
            ("{'a': 1", None),
            ("{'a': 1} and more", None),
        ];
        for (text, expected) in table {
            assert_eq!(parse(text), expected, "{text}");
        }
    }
}
