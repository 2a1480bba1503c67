//! Tests of the AI SDK dialect.
