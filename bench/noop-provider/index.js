// The benchmark's floor: a dynamic provider that does nothing. It is this module's whole
// `module.exports`, installed under node_modules, so Pulumi's closure serializer stores it as
// `require("tuskr-bench-noop")`, exactly as it stores pulumi-tuskr's stub
// (`require("pulumi-tuskr/provider")`): the floor's state is then the size of ours, and a ratio
// measures the provider's work, not the size of its serialized code.

/** Inputs compared by diff; an asset by its hash (the engine hands old assets with contents elided). */
const FIELDS = ["blobId", "source", "name", "tag", "metadata", "retentionEpochs"];
const comparable = (key, value) => (key === "source" && value && typeof value === "object" ? value.hash : JSON.stringify(value));

module.exports = {
  async create(inputs) {
    return { id: String(inputs.blobId ?? inputs.name), outs: inputs };
  },
  async diff(_id, olds, news) {
    const changed = FIELDS.filter((k) => comparable(k, olds[k]) !== comparable(k, news[k]));
    const replaces = changed.filter((k) => k === "blobId" || k === "source");
    return { changes: changed.length > 0, replaces };
  },
  async update(_id, _olds, news) {
    return { outs: news };
  },
  async read(id, props) {
    return { id, props };
  },
  async delete() {},
};
