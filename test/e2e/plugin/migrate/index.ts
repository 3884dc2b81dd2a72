import * as pulumi from "@pulumi/pulumi";
import { StoredFile, type StoredFileArgs } from "pulumi-tuskr";
import { PluginStoredFile } from "pulumi-tuskr/plugin";

// The same file, declared first with the dynamic resource (mode "dynamic"), then, after
// `pulumi import` and `pulumi state delete`, through the provider plugin (mode "plugin").
const config = new pulumi.Config();
const blobId = config.require("blobId");
const declared = config.requireObject<Omit<StoredFileArgs, "blobId" | "source">>("declared");

if (config.require("mode") === "dynamic") {
  new StoredFile("logo", { blobId, ...declared });
} else {
  new PluginStoredFile("logo", { blobId, ...declared });
}
