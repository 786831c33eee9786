//! The API described from its types: the OpenAPI 3.1 document that
//! `GET /v1/openapi.json` serves, and the JSON Schema of every request and
//! answer body (`mneme schema api`, `schemas/api.schema.json`). Both are
//! generated from the route table ([`crate::routes::ROUTES`]) and the
//! types' `JsonSchema`, never written by hand.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::ErrorBody;
use crate::params::{AcknowledgeQuery, CoreQuery, ItemQuery, PhaseQuery, TimelineParams};
use crate::routes::{Answer, Method, ROUTES, Route, SchemaOf, path_parameters};

/// OpenAPI 3.1's schemas are JSON Schema 2020-12, kept under
/// `components/schemas`.
fn openapi_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .into_generator()
}

/// The OpenAPI 3.1 document of the HTTP API, for the server's `version`.
pub fn openapi(version: &str) -> Value {
    let mut generator = openapi_generator();
    let error = generator.subschema_for::<ErrorBody>();
    let mut paths = Map::new();
    for route in ROUTES {
        let operation = operation(route, &mut generator, &error);
        let item = paths.entry(route.path).or_insert_with(|| json!({}));
        item[route.method.as_str()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Mneme",
            "version": version,
            "description": "The memory of multi-agent LLM swarms: an append-only event log, per-agent memories \
                (working tier, fact graph, BM25 and vector indexes, phases), budgeted context, handoffs and \
                provenance. Every error answers an ErrorBody. The same queries are answered over NATS \
                request/reply on mneme.<swarm>.<agent>.query.<verb> with the same bodies.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token of [[http.tokens]] in swarm.toml; with none configured the API is open.",
                },
            },
        },
        // Optional: a server without [[http.tokens]] is open.
        "security": [{ "bearer": [] }, {}],
    })
}

fn operation(route: &Route, generator: &mut SchemaGenerator, error: &Schema) -> Value {
    let mut parameters: Vec<Value> = path_parameters(route.path)
        .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }))
        .collect();
    parameters.extend(query_parameters(route.query, generator));
    let mut responses = Map::new();
    match route.answer {
        Answer::Json(status, answer) => {
            let content = json!({ "application/json": { "schema": answer(generator) } });
            responses.insert(status.to_string(), json!({ "description": route.summary, "content": content }));
        }
        Answer::Text => {
            let content = json!({ "text/plain": { "schema": { "type": "string" } } });
            responses.insert("200".to_string(), json!({ "description": route.summary, "content": content }));
        }
        Answer::JsonOrEvents(answer, event) => {
            let event = event(generator);
            let reference = event.get("$ref").cloned().unwrap_or(Value::Null);
            let content = json!({
                "application/json": { "schema": answer(generator) },
                "text/event-stream": { "schema": {
                    "type": "string",
                    "description": format!(
                        "With follow=true: server-sent events `event: handoff`, `id: <handoff_id>`, and on one \
                         `data:` line the JSON of {}; a `: keep-alive` comment when quiet.",
                        reference.as_str().unwrap_or("a delivery")
                    ),
                } },
            });
            responses.insert("200".to_string(), json!({ "description": route.summary, "content": content }));
        }
    }
    responses.insert(
        "default".to_string(),
        json!({ "description": "An error: its status, code, field and message", "content": {
            "application/json": { "schema": error },
        } }),
    );
    let mut operation = json!({
        "operationId": format!("{:?}", route.operation),
        "summary": route.summary,
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(body) = route.body {
        operation["requestBody"] = json!({ "required": route.method == Method::Post, "content": { "application/json": { "schema": body(generator) } } });
    }
    if matches!(route.path, "/healthz" | "/v1/openapi.json") {
        operation["security"] = json!([]);
    }
    operation
}

/// A query-string struct as OpenAPI parameters: one per field, with its
/// schema and description.
fn query_parameters(query: SchemaOf, generator: &mut SchemaGenerator) -> Vec<Value> {
    let reference = query(generator);
    let Some(name) = reference.get("$ref").and_then(Value::as_str).and_then(|path| path.rsplit('/').next()) else {
        return Vec::new();
    };
    let Some(definition) = generator.definitions().get(name) else { return Vec::new() };
    let required: Vec<&str> = definition["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = definition["properties"].as_object() else { return Vec::new() };
    properties
        .iter()
        .map(|(field, schema)| {
            let mut parameter =
                json!({ "name": field, "in": "query", "required": required.contains(&field.as_str()), "schema": schema });
            if let Some(description) = schema.get("description") {
                parameter["description"] = description.clone();
            }
            parameter
        })
        .collect()
}

/// The JSON Schema of every request and answer body of the API, HTTP and
/// NATS alike, under `$defs`.
pub fn api_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    generator.subschema_for::<ErrorBody>();
    for route in ROUTES {
        (route.query)(&mut generator);
        if let Some(body) = route.body {
            body(&mut generator);
        }
        match route.answer {
            Answer::Json(_, answer) => {
                answer(&mut generator);
            }
            Answer::Text => {}
            Answer::JsonOrEvents(answer, event) => {
                answer(&mut generator);
                event(&mut generator);
            }
        }
    }
    // The NATS verbs' own bodies; the others are the HTTP routes'.
    subschema::<PhaseQuery>(&mut generator);
    subschema::<AcknowledgeQuery>(&mut generator);
    subschema::<ItemQuery>(&mut generator);
    subschema::<CoreQuery>(&mut generator);
    subschema::<TimelineParams>(&mut generator);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Mneme API bodies",
        "description": "Every request and answer body of Mneme's HTTP API and NATS queries, by type name.",
        "$defs": generator.take_definitions(true),
    })
}

fn subschema<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}
