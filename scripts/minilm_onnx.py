"""Builds all-MiniLM-L6-v2 as an ONNX graph with 8-bit weights, from the
model.safetensors and config.json that scripts/fetch-model.sh fetched.

    python minilm_onnx.py MODEL_DIR OUT.onnx

Run by scripts/fetch-deep-model.sh with pinned onnx, numpy and onnxruntime.
No export tool (torch) is involved: the graph is written here, layer by
layer, as BERT computes it (Hugging Face's `BertModel` in eval mode):

- input `input_ids` int64 [batch, sequence], one text per row, no padding:
  Mneme runs each text alone (below), so there is no attention mask;
- embeddings: word + position + token type 0, layer norm;
- per layer: Q, K, V projections, softmax(Q Kᵀ / √d) V per head, the output
  projection, residual, layer norm; the feed-forward with exact (erf) GELU,
  residual, layer norm;
- output `pooled` float [batch, hidden]: the mean over the sequence
  (sentence-transformers' mean pooling; L2 normalisation is the caller's).

Then onnxruntime's dynamic quantiser turns the 36 linear layers into 8-bit
integer products (weights per output channel, fixed at build time;
activations per tensor, measured at run time). Activations are scaled per
tensor, so a text's vector would depend on the texts batched with it: run
one text per forward. Same inputs and pinned versions give the same file,
byte for byte (scripts/fetch-deep-model.sh checks its sha256).
"""

import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

OPSET = 17


def read_safetensors(path):
    with open(path, "rb") as file:
        (header_length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(header_length))
        data = file.read()
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(meta["shape"])
    return tensors


class Graph:
    def __init__(self, weights):
        self.weights = weights
        self.nodes = []
        self.initializers = []
        self.names = set()
        self.counter = 0

    def fresh(self, stem):
        self.counter += 1
        return f"{stem}_{self.counter}"

    def constant(self, name, array):
        if name not in self.names:
            self.names.add(name)
            self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def weight(self, name, transpose=False):
        array = self.weights[name]
        if transpose:
            array = array.T
        return self.constant(name, array.astype(np.float32))

    def op(self, op_type, inputs, stem=None, **attributes):
        output = self.fresh(stem or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x, prefix):
        # nn.Linear stores (out, in); x @ Wᵀ + b.
        product = self.op("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)], f"{prefix}.matmul")
        return self.op("Add", [product, self.weight(f"{prefix}.bias")], f"{prefix}.add")

    def layer_norm(self, x, prefix, epsilon):
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
            f"{prefix}.norm",
            axis=-1,
            epsilon=epsilon,
        )


def build(model_dir):
    with open(os.path.join(model_dir, "config.json")) as file:
        config = json.load(file)
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        sys.exit("error: only BERT with exact GELU and absolute positions is supported")
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_size = hidden // heads
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    graph = Graph(weights)

    ids = "input_ids"
    # Embeddings: words, positions 0..sequence-1, token type 0.
    words = graph.op("Gather", [graph.weight("embeddings.word_embeddings.weight"), ids], "words")
    # Rows 0..sequence of the position table: a slice, no index arithmetic.
    length = graph.op("Shape", [ids], "length", start=1, end=2)
    zero = graph.constant("zero", np.array([0], dtype=np.int64))
    position_rows = graph.op(
        "Slice", [graph.weight("embeddings.position_embeddings.weight"), zero, length, zero], "position_rows"
    )
    token_type = graph.constant(
        "embeddings.token_type_0", weights["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
    )
    x = graph.op("Add", [words, position_rows], "embedded")
    x = graph.op("Add", [x, token_type], "embedded_typed")
    x = graph.layer_norm(x, "embeddings.LayerNorm", epsilon)

    split_heads = graph.constant("split_heads", np.array([0, 0, heads, head_size], dtype=np.int64))
    merge_heads = graph.constant("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = graph.constant("attention_scale", np.array(1.0 / math.sqrt(head_size), dtype=np.float32))
    inverse_sqrt2 = graph.constant("inverse_sqrt2", np.array(1.0 / math.sqrt(2.0), dtype=np.float32))
    half = graph.constant("half", np.array(0.5, dtype=np.float32))
    one = graph.constant("one_f", np.array(1.0, dtype=np.float32))

    for layer in range(config["num_hidden_layers"]):
        prefix = f"encoder.layer.{layer}"

        def heads_of(name, permutation):
            projected = graph.linear(x, f"{prefix}.attention.self.{name}")
            shaped = graph.op("Reshape", [projected, split_heads], f"{prefix}.{name}.heads")
            return graph.op("Transpose", [shaped], f"{prefix}.{name}.t", perm=permutation)

        query = heads_of("query", [0, 2, 1, 3])  # [b, h, s, d]
        key = heads_of("key", [0, 2, 3, 1])  # [b, h, d, s]
        value = heads_of("value", [0, 2, 1, 3])  # [b, h, s, d]
        scores = graph.op("MatMul", [query, key], f"{prefix}.scores")
        scores = graph.op("Mul", [scores, scale], f"{prefix}.scaled")
        probabilities = graph.op("Softmax", [scores], f"{prefix}.softmax", axis=-1)
        context = graph.op("MatMul", [probabilities, value], f"{prefix}.context")
        context = graph.op("Transpose", [context], f"{prefix}.context.t", perm=[0, 2, 1, 3])
        context = graph.op("Reshape", [context, merge_heads], f"{prefix}.context.merged")
        attended = graph.linear(context, f"{prefix}.attention.output.dense")
        x = graph.layer_norm(graph.op("Add", [attended, x], f"{prefix}.residual1"), f"{prefix}.attention.output.LayerNorm", epsilon)

        inner = graph.linear(x, f"{prefix}.intermediate.dense")
        # GELU(x) = x · ½ · (1 + erf(x / √2)), the exact form BERT uses.
        erf = graph.op("Erf", [graph.op("Mul", [inner, inverse_sqrt2], f"{prefix}.gelu.div")], f"{prefix}.gelu.erf")
        gated = graph.op("Mul", [graph.op("Add", [erf, one], f"{prefix}.gelu.add"), half], f"{prefix}.gelu.half")
        activated = graph.op("Mul", [inner, gated], f"{prefix}.gelu")
        out = graph.linear(activated, f"{prefix}.output.dense")
        x = graph.layer_norm(graph.op("Add", [out, x], f"{prefix}.residual2"), f"{prefix}.output.LayerNorm", epsilon)

    pooled = graph.op("ReduceMean", [x], "mean", axes=[1], keepdims=0)
    graph.nodes.append(helper.make_node("Identity", [pooled], ["pooled"], name="pooled"))

    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            "all-MiniLM-L6-v2",
            [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"])],
            [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="mneme scripts/minilm_onnx.py",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: minilm_onnx.py MODEL_DIR OUT.onnx")
    model_dir, out = sys.argv[1:]
    model = build(model_dir)
    with tempfile.TemporaryDirectory() as work:
        float_path = os.path.join(work, "float.onnx")
        onnx.save(model, float_path)
        if os.environ.get("MNEME_ONNX_FLOAT"):
            onnx.save(model, os.environ["MNEME_ONNX_FLOAT"])
        quantize_dynamic(
            float_path,
            out,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )


if __name__ == "__main__":
    main()
