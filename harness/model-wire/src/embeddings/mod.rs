//! The embeddings routes of the model providers, as plain functions (issue 41, items 1 and 2):
//! a request at any of them read into one [`EmbeddingsRequest`] (the model, the input texts in
//! order, the dimensions, the form the answer must take), whose [`EmbeddingsRequest::canonical`]
//! form is what the `embeddings` boundary keys and compares (`replay_core::exchange`: a batch is
//! one call); an upstream's answer read into its vectors ([`read_answer`]); those vectors stored
//! compactly ([`CompactVector`]: base64 of little-endian f32, with the length) and rendered back
//! in the form the request asked for ([`render_answer`]), bit for bit the recorded floats.
//!
//! The routes ([`EmbeddingsRoute`]):
//!
//! - OpenAI `POST /v1/embeddings`: `input` a string, a list of strings, a token array or a list
//!   of token arrays (a token array is kept as its list of integers); `dimensions`;
//!   `encoding_format` `float` (the default) or `base64` (the vector's little-endian f32 bytes);
//! - Gemini `POST …/models/{model}:embedContent` (`content.parts[].text`, `outputDimensionality`)
//!   and `:batchEmbedContents` (`requests[]`, each one such request);
//! - Bedrock `InvokeModel` for Amazon Titan Text Embeddings v2 (`inputText`, `dimensions`) and
//!   Cohere Embed (`texts`, `input_type`);
//! - Ollama `POST /api/embed` (`input` a string or a list, `dimensions`) and the older
//!   `/api/embeddings` (`prompt`).
//!
//! A float the provider sent as JSON is read as the `f32` it is (providers compute in f32 and
//! print its shortest decimal) and rendered with that same shortest decimal, so a client parses
//! the very number the provider sent; a base64 vector is its bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

#[cfg(test)]
mod tests;

/// What is wrong with an embeddings request, answer or stored vector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddingsError {
    /// The request has no input where the route carries it.
    #[error("the {route} request has no {what}")]
    NoInput {
        /// The route's name.
        route: &'static str,
        /// The field and what it must hold.
        what: &'static str,
    },
    /// An answer without the vectors where the route carries them.
    #[error("the {route} answer has no {what}")]
    NoVectors {
        /// The route's name.
        route: &'static str,
        /// The field.
        what: &'static str,
    },
    /// A vector element that is not a finite number.
    #[error("element {index} of vector {vector} is not a finite number: {value}")]
    NotANumber {
        /// The vector's position in the answer.
        vector: usize,
        /// The element's position.
        index: usize,
        /// The element as sent.
        value: String,
    },
    /// A stored or sent base64 vector that does not decode to `dims` f32s.
    #[error("a base64 vector is not {dims} little-endian f32s: {reason}")]
    BadBase64 {
        /// The length it should have.
        dims: usize,
        /// Why not.
        reason: String,
    },
}

/// An embeddings route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbeddingsRoute {
    /// OpenAI's `POST /v1/embeddings`.
    OpenAi,
    /// Gemini's `:embedContent`.
    GeminiEmbed,
    /// Gemini's `:batchEmbedContents`.
    GeminiBatch,
    /// Bedrock `InvokeModel` on an Amazon Titan Text Embeddings model.
    BedrockTitan,
    /// Bedrock `InvokeModel` on a Cohere Embed model.
    BedrockCohere,
    /// Ollama's `POST /api/embed`.
    OllamaEmbed,
    /// Ollama's older `POST /api/embeddings` (one `prompt`, one `embedding`).
    OllamaEmbeddings,
}

impl EmbeddingsRoute {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            EmbeddingsRoute::OpenAi => "OpenAI embeddings",
            EmbeddingsRoute::GeminiEmbed => "Gemini embedContent",
            EmbeddingsRoute::GeminiBatch => "Gemini batchEmbedContents",
            EmbeddingsRoute::BedrockTitan => "Bedrock Titan embeddings",
            EmbeddingsRoute::BedrockCohere => "Bedrock Cohere embed",
            EmbeddingsRoute::OllamaEmbed => "Ollama embed",
            EmbeddingsRoute::OllamaEmbeddings => "Ollama embeddings",
        }
    }

    /// The chat wire of the same provider: its key header, its error body and its client's
    /// error classes are the embeddings route's too.
    pub fn wire(self) -> crate::Wire {
        match self {
            EmbeddingsRoute::OpenAi => crate::Wire::ChatCompletions,
            EmbeddingsRoute::GeminiEmbed | EmbeddingsRoute::GeminiBatch => crate::Wire::Gemini,
            EmbeddingsRoute::BedrockTitan | EmbeddingsRoute::BedrockCohere => {
                crate::Wire::BedrockConverse
            }
            EmbeddingsRoute::OllamaEmbed | EmbeddingsRoute::OllamaEmbeddings => {
                crate::Wire::OllamaChat
            }
        }
    }

    /// The path of a call for `model` under the provider's base URL (the one its chat wire's
    /// [`Wire::call_path`](crate::Wire::call_path) follows): `/embeddings`,
    /// `/models/{model}:embedContent`, `/model/{id}/invoke`, `/api/embed`.
    pub fn call_path(self, model: &str) -> String {
        let segment = crate::model_segment(model);
        match self {
            EmbeddingsRoute::OpenAi => "/embeddings".to_owned(),
            EmbeddingsRoute::GeminiEmbed => format!("/models/{segment}:embedContent"),
            EmbeddingsRoute::GeminiBatch => format!("/models/{segment}:batchEmbedContents"),
            EmbeddingsRoute::BedrockTitan | EmbeddingsRoute::BedrockCohere => {
                format!("/model/{segment}/invoke")
            }
            EmbeddingsRoute::OllamaEmbed => "/api/embed".to_owned(),
            EmbeddingsRoute::OllamaEmbeddings => "/api/embeddings".to_owned(),
        }
    }

    /// The Bedrock route a model id names (`amazon.titan-embed-…`, `cohere.embed-…`, with or
    /// without a region prefix such as `us.`), or `None` for any other model.
    pub fn bedrock(model_id: &str) -> Option<EmbeddingsRoute> {
        if model_id.contains("amazon.titan-embed") {
            Some(EmbeddingsRoute::BedrockTitan)
        } else if model_id.contains("cohere.embed") {
            Some(EmbeddingsRoute::BedrockCohere)
        } else {
            None
        }
    }
}

/// The form a vector is answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// A JSON list of numbers.
    Float,
    /// Base64 of the little-endian f32 bytes (OpenAI's `encoding_format: "base64"`).
    Base64,
}

/// One embeddings call, read at its route.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsRequest {
    /// The route it came in at.
    pub route: EmbeddingsRoute,
    /// The model (the body's, or the path's at Gemini and Bedrock).
    pub model: String,
    /// The inputs in order: texts as strings, token arrays as lists of integers.
    pub inputs: Vec<Value>,
    /// The dimensions asked for, when the request names them.
    pub dimensions: Option<u64>,
    /// The other options that change the vectors (Gemini's `taskType`, Cohere's `input_type`,
    /// Titan's `normalize`), as sent.
    pub options: Map<String, Value>,
    /// The form the answer's vectors take.
    pub encoding: Encoding,
}

fn text_parts(content: Option<&Value>) -> String {
    content
        .and_then(|content| content.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

fn strings_or_one(value: Option<&Value>) -> Option<Vec<Value>> {
    match value? {
        text @ Value::String(_) => Some(vec![text.clone()]),
        Value::Array(items) if items.is_empty() => None,
        // A token array (OpenAI) is one input.
        Value::Array(items) if items.iter().all(Value::is_number) => {
            Some(vec![Value::Array(items.clone())])
        }
        Value::Array(items) => Some(items.clone()),
        _ => None,
    }
}

fn picked(body: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|key| {
            body.get(*key)
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect()
}

impl EmbeddingsRequest {
    /// Reads `body` at `route`; `path_model` is the model the path names (Gemini, Bedrock).
    pub fn parse(
        route: EmbeddingsRoute,
        path_model: Option<&str>,
        body: &Value,
    ) -> Result<EmbeddingsRequest, EmbeddingsError> {
        let no_input = |what| EmbeddingsError::NoInput {
            route: route.name(),
            what,
        };
        let number = |key: &str| body.get(key).and_then(Value::as_u64);
        let (inputs, dimensions, options) = match route {
            EmbeddingsRoute::OpenAi => (
                strings_or_one(body.get("input"))
                    .ok_or(no_input("\"input\" (a string, strings or token arrays)"))?,
                number("dimensions"),
                Map::new(),
            ),
            EmbeddingsRoute::GeminiEmbed => (
                vec![json!(text_parts(body.get("content")))],
                number("outputDimensionality"),
                picked(body, &["taskType", "title"]),
            ),
            EmbeddingsRoute::GeminiBatch => {
                let requests = body
                    .get("requests")
                    .and_then(Value::as_array)
                    .filter(|requests| !requests.is_empty())
                    .ok_or(no_input("\"requests\" array"))?;
                let first = &requests[0];
                (
                    requests
                        .iter()
                        .map(|request| json!(text_parts(request.get("content"))))
                        .collect(),
                    first.get("outputDimensionality").and_then(Value::as_u64),
                    picked(first, &["taskType", "title"]),
                )
            }
            EmbeddingsRoute::BedrockTitan => (
                vec![
                    body.get("inputText")
                        .filter(|text| text.is_string())
                        .cloned()
                        .ok_or(no_input("\"inputText\" string"))?,
                ],
                number("dimensions"),
                picked(body, &["normalize"]),
            ),
            EmbeddingsRoute::BedrockCohere => (
                strings_or_one(body.get("texts")).ok_or(no_input("\"texts\" array"))?,
                None,
                picked(body, &["input_type", "truncate"]),
            ),
            EmbeddingsRoute::OllamaEmbed => (
                strings_or_one(body.get("input"))
                    .ok_or(no_input("\"input\" (a string or strings)"))?,
                number("dimensions"),
                Map::new(),
            ),
            EmbeddingsRoute::OllamaEmbeddings => (
                vec![
                    body.get("prompt")
                        .filter(|text| text.is_string())
                        .cloned()
                        .ok_or(no_input("\"prompt\" string"))?,
                ],
                None,
                Map::new(),
            ),
        };
        let model = path_model
            .map(str::to_owned)
            .or_else(|| body.get("model").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let encoding = match body.get("encoding_format").and_then(Value::as_str) {
            Some("base64") if route == EmbeddingsRoute::OpenAi => Encoding::Base64,
            _ => Encoding::Float,
        };
        Ok(EmbeddingsRequest {
            route,
            model,
            inputs,
            dimensions,
            options,
            encoding,
        })
    }

    /// The call's canonical form, what the `embeddings` boundary keys and a miss compares:
    /// `{"model", "inputs", "dimensions", "options"}` (the answer's encoding is left out: it is
    /// the rendering, not the call). The exchange engine normalises every string in it, as a
    /// conversation's text is.
    pub fn canonical(&self) -> Value {
        json!({
            "model": self.model,
            "inputs": self.inputs,
            "dimensions": self.dimensions,
            "options": self.options,
        })
    }
}

/// A vector as a fixture stores it: `dims` and base64 of its little-endian f32 bytes (4 bytes a
/// dimension, so a 1536-dimension vector is 8,192 characters of base64 instead of ~30 KB of
/// decimals).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactVector {
    /// The number of dimensions.
    pub dims: usize,
    /// Base64 (standard, padded) of the little-endian f32s.
    pub f32le: String,
}

impl CompactVector {
    /// The compact form of `values`.
    pub fn new(values: &[f32]) -> CompactVector {
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|value| value.to_le_bytes())
            .collect();
        CompactVector {
            dims: values.len(),
            f32le: STANDARD.encode(bytes),
        }
    }

    /// The floats it holds; an error when its bytes are not `dims` f32s.
    pub fn values(&self) -> Result<Vec<f32>, EmbeddingsError> {
        decode_f32le(&self.f32le, Some(self.dims))
    }
}

/// Base64 of little-endian f32s as the floats; `dims`, when known, must match.
fn decode_f32le(text: &str, dims: Option<usize>) -> Result<Vec<f32>, EmbeddingsError> {
    let bad = |reason: String| EmbeddingsError::BadBase64 {
        dims: dims.unwrap_or_default(),
        reason,
    };
    let bytes = STANDARD.decode(text).map_err(|err| bad(err.to_string()))?;
    if bytes.len() % 4 != 0 || dims.is_some_and(|dims| dims * 4 != bytes.len()) {
        return Err(bad(format!("{} bytes", bytes.len())));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|four| f32::from_le_bytes([four[0], four[1], four[2], four[3]]))
        .collect())
}

/// What an embeddings answer carried: its vectors in input order, and the prompt tokens when
/// the provider counted them.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// The vectors.
    pub vectors: Vec<Vec<f32>>,
    /// The tokens of the input, when the answer says.
    pub prompt_tokens: Option<u64>,
}

/// A JSON vector (numbers) or, at OpenAI's base64 encoding, a base64 string, as f32s.
fn vector_of(value: &Value, vector: usize) -> Result<Vec<f32>, EmbeddingsError> {
    if let Value::String(text) = value {
        return decode_f32le(text, None);
    }
    let items = value.as_array().cloned().unwrap_or_default();
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item.as_f64()
                .map(|number| number as f32)
                .filter(|number| number.is_finite())
                .ok_or_else(|| EmbeddingsError::NotANumber {
                    vector,
                    index,
                    value: item.to_string(),
                })
        })
        .collect()
}

/// An upstream's answer at `route` read into its vectors.
pub fn read_answer(route: EmbeddingsRoute, body: &Value) -> Result<Embedded, EmbeddingsError> {
    let missing = |what| EmbeddingsError::NoVectors {
        route: route.name(),
        what,
    };
    let list = |key: &'static str| {
        body.get(key)
            .and_then(Value::as_array)
            .cloned()
            .ok_or(missing(key))
    };
    let (raw, tokens): (Vec<Value>, Option<u64>) = match route {
        EmbeddingsRoute::OpenAi => {
            let mut data = list("data")?;
            data.sort_by_key(|item| item.get("index").and_then(Value::as_u64).unwrap_or(0));
            (
                data.iter()
                    .map(|item| item.get("embedding").cloned().unwrap_or(Value::Null))
                    .collect(),
                body.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
            )
        }
        EmbeddingsRoute::GeminiEmbed => (
            vec![
                body.pointer("/embedding/values")
                    .cloned()
                    .ok_or(missing("embedding.values"))?,
            ],
            None,
        ),
        EmbeddingsRoute::GeminiBatch => (
            list("embeddings")?
                .iter()
                .map(|item| item.get("values").cloned().unwrap_or(Value::Null))
                .collect(),
            None,
        ),
        EmbeddingsRoute::BedrockTitan => (
            vec![body.get("embedding").cloned().ok_or(missing("embedding"))?],
            body.get("inputTextTokenCount").and_then(Value::as_u64),
        ),
        EmbeddingsRoute::BedrockCohere => {
            let embeddings = match body.get("embeddings") {
                Some(Value::Object(by_type)) => by_type.get("float").cloned(),
                other => other.cloned(),
            };
            (
                embeddings
                    .and_then(|e| e.as_array().cloned())
                    .ok_or(missing("embeddings"))?,
                None,
            )
        }
        EmbeddingsRoute::OllamaEmbed => (
            list("embeddings")?,
            body.get("prompt_eval_count").and_then(Value::as_u64),
        ),
        EmbeddingsRoute::OllamaEmbeddings => (
            vec![body.get("embedding").cloned().ok_or(missing("embedding"))?],
            None,
        ),
    };
    let vectors = raw
        .iter()
        .enumerate()
        .map(|(position, value)| vector_of(value, position))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Embedded {
        vectors,
        prompt_tokens: tokens,
    })
}

/// `value` as the JSON number of its shortest decimal, the one a provider computing in f32
/// prints: a client parses the very number the provider sent.
fn number(value: f32) -> Value {
    format!("{value}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn floats(vector: &[f32]) -> Value {
    Value::Array(vector.iter().copied().map(number).collect())
}

/// The recorded vectors as `request`'s route answers them, in the form it asked for.
pub fn render_answer(request: &EmbeddingsRequest, answer: &Embedded) -> Value {
    let tokens = answer.prompt_tokens.unwrap_or(0);
    let first = answer
        .vectors
        .first()
        .map(Vec::as_slice)
        .unwrap_or_default();
    match request.route {
        EmbeddingsRoute::OpenAi => {
            let data: Vec<Value> = answer
                .vectors
                .iter()
                .enumerate()
                .map(|(index, vector)| {
                    let embedding = match request.encoding {
                        Encoding::Float => floats(vector),
                        Encoding::Base64 => json!(CompactVector::new(vector).f32le),
                    };
                    json!({"object": "embedding", "index": index, "embedding": embedding})
                })
                .collect();
            json!({"object": "list", "data": data, "model": request.model,
                   "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
        }
        EmbeddingsRoute::GeminiEmbed => json!({"embedding": {"values": floats(first)}}),
        EmbeddingsRoute::GeminiBatch => {
            let embeddings: Vec<Value> = answer
                .vectors
                .iter()
                .map(|vector| json!({"values": floats(vector)}))
                .collect();
            json!({"embeddings": embeddings})
        }
        EmbeddingsRoute::BedrockTitan => {
            json!({"embedding": floats(first), "inputTextTokenCount": tokens})
        }
        EmbeddingsRoute::BedrockCohere => {
            let embeddings: Vec<Value> = answer.vectors.iter().map(|v| floats(v)).collect();
            json!({"embeddings": embeddings, "texts": request.inputs,
                   "response_type": "embeddings_floats"})
        }
        EmbeddingsRoute::OllamaEmbed => {
            let embeddings: Vec<Value> = answer.vectors.iter().map(|v| floats(v)).collect();
            json!({"model": request.model, "embeddings": embeddings, "prompt_eval_count": tokens})
        }
        EmbeddingsRoute::OllamaEmbeddings => json!({"embedding": floats(first)}),
    }
}

/// The recorded form of an answer: its vectors compact, and the prompt tokens.
pub fn recorded_answer(answer: &Embedded) -> Value {
    let vectors: Vec<CompactVector> = answer
        .vectors
        .iter()
        .map(|v| CompactVector::new(v))
        .collect();
    json!({"vectors": vectors, "prompt_tokens": answer.prompt_tokens})
}

/// An answer's recorded form ([`recorded_answer`]) read back.
pub fn answer_from_recorded(recorded: &Value) -> Result<Embedded, EmbeddingsError> {
    let vectors: Vec<CompactVector> = recorded
        .get("vectors")
        .cloned()
        .and_then(|vectors| serde_json::from_value(vectors).ok())
        .ok_or(EmbeddingsError::NoVectors {
            route: "recorded",
            what: "vectors",
        })?;
    Ok(Embedded {
        vectors: vectors
            .iter()
            .map(CompactVector::values)
            .collect::<Result<_, _>>()?,
        prompt_tokens: recorded.get("prompt_tokens").and_then(Value::as_u64),
    })
}
