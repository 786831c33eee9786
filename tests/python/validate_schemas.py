"""Validates what Mneme generates from its types with validators that are
not Mneme's: the OpenAPI document as served (openapi-spec-validator, OpenAPI
3.1), the event schema and the API-body schema as JSON Schema 2020-12
documents (jsonschema's meta-schema check), and, against them, the JSON
examples of the README and the book (docs/src) and examples/trajectory.jsonl.

Run by tests/schemas.rs:
    validate_schemas.py OPENAPI EVENTS_SCHEMA API_SCHEMA TRAJECTORY MARKDOWN...

Each MARKDOWN is a file or a folder (every *.md under it).

Prints one line per check and exits non-zero on the first failure, naming
the example and the validator's message.
"""

import json
import pathlib
import re
import sys

import jsonschema
from openapi_spec_validator import validate as validate_openapi
from openapi_spec_validator.versions import consts, get_spec_version


def load(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(validator, instance, what):
    errors = sorted(validator.iter_errors(instance), key=lambda error: list(error.absolute_path))
    if errors:
        error = errors[0]
        path = "/".join(str(part) for part in error.absolute_path) or "(root)"
        fail(f"{what}: at {path}: {error.message}")


def markdown_examples(text):
    """A Markdown file's events (```json blocks, `echo '<json>' | mneme
    publish -`, and `curl …/v1/events … -d '<json>'`) and NATS query bodies
    (`nats request mneme.<swarm>.<agent>.query.<verb> '<json>'`)."""
    events = []
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        document = json.loads(block)
        events.extend(document if isinstance(document, list) else [document])
    published = re.findall(r"echo '([^']*)' \| mneme publish -", text)
    published += re.findall(r"curl [^\n]*/v1/events [^\n]*-d '([^']*)'", text)
    for body in published:
        document = json.loads(body)
        events.extend(document if isinstance(document, list) else [document])
    queries = [
        (verb, json.loads(body))
        for verb, body in re.findall(r"nats request mneme\.[\w-]+\.[\w-]+\.query\.(\w+) '([^']*)'", text)
    ]
    return events, queries


def markdown_files(paths):
    """The files named, and every *.md under the folders named, in order."""
    files = []
    for path in map(pathlib.Path, paths):
        files.extend(sorted(path.rglob("*.md")) if path.is_dir() else [path])
    return files


# The type each NATS verb's body is, in the API schema's $defs.
QUERY_BODIES = {
    "search": "SearchParams",
    "context": "ContextBody",
    "graph": "GraphParams",
    "provenance": "ProvenanceParams",
    "phase": "PhaseQuery",
    "items": "ItemQuery",
    "handoffs": "MinSeqParams",
    "ack": "AcknowledgeQuery",
    "core": "CoreQuery",
    "note": "NoteBody",
    "timeline": "TimelineParams",
}


def main():
    openapi_path, events_path, api_path, trajectory_path, *markdown_paths = sys.argv[1:]

    openapi = load(openapi_path)
    if get_spec_version(openapi) != consts.OPENAPIV31:
        fail(f"{openapi_path} is not detected as OpenAPI 3.1 (openapi: {openapi.get('openapi')!r})")
    validate_openapi(openapi)
    print(f"openapi: valid OpenAPI 3.1, {len(openapi['paths'])} paths")

    events_schema = load(events_path)
    api_schema = load(api_path)
    for name, schema in (("events", events_schema), ("api", api_schema)):
        jsonschema.Draft202012Validator.check_schema(schema)
        print(f"{name} schema: a valid JSON Schema 2020-12 document")

    event_validator = jsonschema.Draft202012Validator(
        events_schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    all_events, all_queries = 0, 0
    for path in markdown_files(markdown_paths):
        with open(path, encoding="utf-8") as file:
            events, queries = markdown_examples(file.read())
        for index, event in enumerate(events):
            check(event_validator, event, f"{path} event example {index + 1} ({event.get('kind')})")
        for verb, body in queries:
            schema = {"$ref": f"#/$defs/{QUERY_BODIES[verb]}", "$defs": api_schema["$defs"]}
            check(jsonschema.Draft202012Validator(schema), body, f"{path} NATS {verb} body {body}")
        if events or queries:
            print(f"{path}: {len(events)} event examples and {len(queries)} NATS query bodies valid")
        all_events, all_queries = all_events + len(events), all_queries + len(queries)
    if not all_events or not all_queries:
        fail(f"found {all_events} event examples and {all_queries} NATS query examples in {markdown_paths}")
    print(f"docs: {all_events} event examples and {all_queries} NATS query bodies valid")

    count = 0
    with open(trajectory_path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if line.strip():
                check(event_validator, json.loads(line), f"{trajectory_path} line {number}")
                count += 1
    print(f"trajectory: {count} events valid")

    # The schema must refuse what the decoder refuses, or the checks above
    # prove nothing: a misspelt payload field, an unknown kind, a bad name,
    # a time that is not RFC 3339, an unknown envelope field.
    with open(trajectory_path, encoding="utf-8") as file:
        event = json.loads(file.readline())
    spoilt = [
        ("a misspelt data field", {**event, "data": {**event["data"], "txet": "x"}}),
        ("an unknown kind", {**event, "kind": "thought_teleported"}),
        ("a name with a dot", {**event, "agent": "coder.1"}),
        ("a time that is not RFC 3339", {**event, "ts": "yesterday at noon"}),
        ("an unknown envelope field", {**event, "priority": 1}),
        ("no id", {key: value for key, value in event.items() if key != "id"}),
    ]
    for what, instance in spoilt:
        if event_validator.is_valid(instance):
            fail(f"the event schema accepts an event with {what}")
    print(f"event schema: refuses {len(spoilt)} spoilt events")


if __name__ == "__main__":
    main()
