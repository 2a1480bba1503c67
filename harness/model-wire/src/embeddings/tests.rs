//! The embeddings routes' tests: each route's request read into one canonical call, its answer
//! read and rendered back bit for bit, in float and base64 form, and the compact vector's size.

use serde_json::{Value, json};

use super::*;

/// Decimals as providers print them: each the shortest form of an f32.
const SENT: &str = "[-0.006929283, 0.1, 1e-7, 0.33333334, -1.0]";

fn sent() -> Value {
    serde_json::from_str(SENT).unwrap()
}

/// The numbers of a rendered vector, as text.
fn texts(vector: &Value) -> Vec<String> {
    vector
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect()
}

#[test]
fn each_route_reads_its_request_into_one_canonical_call_and_renders_the_vectors_back() {
    let v = sent();
    // (route, path model, request, answer, where the rendered vectors are, inputs)
    let cases = [
        (
            EmbeddingsRoute::OpenAi,
            None,
            json!({"model": "text-embedding-3-small", "input": ["a", "b"], "dimensions": 5}),
            json!({"object": "list", "data": [{"index": 1, "embedding": v}, {"index": 0, "embedding": v}],
                   "usage": {"prompt_tokens": 2, "total_tokens": 2}}),
            "/data/1/embedding",
            json!(["a", "b"]),
        ),
        (
            EmbeddingsRoute::OpenAi,
            None,
            json!({"model": "m", "input": [1, 2, 3]}),
            json!({"data": [{"index": 0, "embedding": v}]}),
            "/data/0/embedding",
            json!([[1, 2, 3]]),
        ),
        (
            EmbeddingsRoute::GeminiEmbed,
            Some("text-embedding-004"),
            json!({"content": {"parts": [{"text": "a"}]}, "taskType": "RETRIEVAL_QUERY"}),
            json!({"embedding": {"values": v}}),
            "/embedding/values",
            json!(["a"]),
        ),
        (
            EmbeddingsRoute::GeminiBatch,
            Some("text-embedding-004"),
            json!({"requests": [{"content": {"parts": [{"text": "a"}]}}, {"content": {"parts": [{"text": "b"}]}}]}),
            json!({"embeddings": [{"values": v}, {"values": v}]}),
            "/embeddings/1/values",
            json!(["a", "b"]),
        ),
        (
            EmbeddingsRoute::BedrockTitan,
            Some("amazon.titan-embed-text-v2:0"),
            json!({"inputText": "a", "dimensions": 5, "normalize": true}),
            json!({"embedding": v, "inputTextTokenCount": 1}),
            "/embedding",
            json!(["a"]),
        ),
        (
            EmbeddingsRoute::BedrockCohere,
            Some("cohere.embed-english-v3"),
            json!({"texts": ["a", "b"], "input_type": "search_document"}),
            json!({"id": "x", "embeddings": [v, v], "response_type": "embeddings_floats"}),
            "/embeddings/1",
            json!(["a", "b"]),
        ),
        (
            EmbeddingsRoute::OllamaEmbed,
            None,
            json!({"model": "nomic-embed-text", "input": "a"}),
            json!({"model": "nomic-embed-text", "embeddings": [v], "prompt_eval_count": 1}),
            "/embeddings/0",
            json!(["a"]),
        ),
        (
            EmbeddingsRoute::OllamaEmbeddings,
            None,
            json!({"model": "nomic-embed-text", "prompt": "a"}),
            json!({"embedding": v}),
            "/embedding",
            json!(["a"]),
        ),
    ];
    for (route, path_model, request, answer, at, inputs) in cases {
        let how = format!("{route:?} {request}");
        let request = EmbeddingsRequest::parse(route, path_model, &request).expect(&how);
        assert_eq!(request.canonical()["inputs"], inputs, "{how}");
        let embedded = read_answer(route, &answer).expect(&how);
        assert_eq!(
            embedded.vectors.len(),
            inputs.as_array().unwrap().len(),
            "{how}"
        );
        // Stored compactly and read back, then rendered: the very decimals the provider sent.
        let stored = answer_from_recorded(&recorded_answer(&embedded)).expect(&how);
        assert_eq!(stored, embedded, "{how}");
        let rendered = render_answer(&request, &stored);
        let vector = rendered
            .pointer(at)
            .unwrap_or_else(|| panic!("{how}: {rendered}"));
        assert_eq!(texts(vector), texts(&sent()), "{how}");
        // Read back: the same vectors (an unrecorded token count is answered as 0).
        let again = read_answer(route, &rendered).expect(&how);
        assert_eq!(again.vectors, stored.vectors, "{how}");
    }
}

/// OpenAI's base64 answer is the f32 bytes: read, stored and rendered back byte for byte, and
/// as floats when the request asks for floats.
#[test]
fn a_base64_vector_is_rendered_back_byte_for_byte() {
    let values = [-0.006929283f32, 0.1, 1e-7, f32::MIN_POSITIVE, 3.4e38];
    let bytes = CompactVector::new(&values).f32le;
    let answer = json!({"data": [{"index": 0, "embedding": bytes}]});
    let embedded = read_answer(EmbeddingsRoute::OpenAi, &answer).unwrap();
    for (format, want) in [("base64", json!(bytes)), ("float", Value::Null)] {
        let body = json!({"model": "m", "input": "a", "encoding_format": format});
        let request = EmbeddingsRequest::parse(EmbeddingsRoute::OpenAi, None, &body).unwrap();
        assert_eq!(request.canonical()["inputs"], json!(["a"]));
        let rendered = render_answer(&request, &embedded);
        let got = &rendered["data"][0]["embedding"];
        if want.is_null() {
            let floats: Vec<f32> = got
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_f64().unwrap() as f32)
                .collect();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&floats), bits(&values));
        } else {
            assert_eq!(got, &want);
        }
    }
}

/// One 1536-dimension vector costs 8,192 characters of base64 (and its length), not ~30 KB of
/// decimals; a stored vector whose bytes do not match its length is refused, naming it.
#[test]
fn a_compact_vector_is_four_bytes_a_dimension_and_checked() {
    let values: Vec<f32> = (0..1536).map(|i| (i as f32 * 0.37).sin() / 7.0).collect();
    let compact = CompactVector::new(&values);
    let stored = serde_json::to_string(&compact).unwrap();
    assert_eq!(compact.f32le.len(), 8192);
    assert!(stored.len() < 8_220, "{}", stored.len());
    let decimals = floats(&values).to_string();
    assert!(decimals.len() > 15_000, "{}", decimals.len());
    assert_eq!(compact.values().unwrap(), values);
    let short = CompactVector {
        dims: 3,
        f32le: CompactVector::new(&values[..2]).f32le,
    };
    assert_eq!(
        short.values().unwrap_err().to_string(),
        "a base64 vector is not 3 little-endian f32s: 8 bytes"
    );
}

#[test]
fn a_request_without_input_or_an_answer_without_vectors_is_named() {
    let error =
        EmbeddingsRequest::parse(EmbeddingsRoute::OllamaEmbed, None, &json!({"model": "m"}))
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the Ollama embed request has no \"input\" (a string or strings)"
    );
    let error = read_answer(EmbeddingsRoute::GeminiEmbed, &json!({})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the Gemini embedContent answer has no embedding.values"
    );
    let error = read_answer(
        EmbeddingsRoute::OllamaEmbeddings,
        &json!({"embedding": [1, "x"]}),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "element 1 of vector 0 is not a finite number: \"x\""
    );
    assert_eq!(
        EmbeddingsRoute::bedrock("us.cohere.embed-english-v3"),
        Some(EmbeddingsRoute::BedrockCohere)
    );
    assert_eq!(EmbeddingsRoute::bedrock("anthropic.claude"), None);
}

/// Each route is forwarded to its provider's path under the chat wire's base URL, with that
/// wire's key header and error shape.
#[test]
fn each_route_is_called_at_its_provider_s_path_beside_its_chat_wire() {
    let cases = [
        (
            EmbeddingsRoute::OpenAi,
            "m",
            "/embeddings",
            crate::Wire::ChatCompletions,
        ),
        (
            EmbeddingsRoute::GeminiEmbed,
            "text-embedding-004",
            "/models/text-embedding-004:embedContent",
            crate::Wire::Gemini,
        ),
        (
            EmbeddingsRoute::GeminiBatch,
            "text-embedding-004",
            "/models/text-embedding-004:batchEmbedContents",
            crate::Wire::Gemini,
        ),
        (
            EmbeddingsRoute::BedrockTitan,
            "amazon.titan-embed-text-v2:0",
            "/model/amazon.titan-embed-text-v2%3A0/invoke",
            crate::Wire::BedrockConverse,
        ),
        (
            EmbeddingsRoute::BedrockCohere,
            "cohere.embed-english-v3",
            "/model/cohere.embed-english-v3/invoke",
            crate::Wire::BedrockConverse,
        ),
        (
            EmbeddingsRoute::OllamaEmbed,
            "m",
            "/api/embed",
            crate::Wire::OllamaChat,
        ),
        (
            EmbeddingsRoute::OllamaEmbeddings,
            "m",
            "/api/embeddings",
            crate::Wire::OllamaChat,
        ),
    ];
    for (route, model, path, wire) in cases {
        assert_eq!(
            (route.call_path(model), route.wire()),
            (path.to_owned(), wire),
            "{route:?}"
        );
    }
}
