"""Files kept on Tuskr from Python, through the tuskr provider plugin (see README.md)."""
import pulumi
import pulumi_tuskr as tuskr

config = pulumi.Config()

# Uploaded from its content: the blobId is an output.
handbook = tuskr.StoredFile(
    "handbook",
    source=pulumi.FileAsset("files/handbook.md"),
    name="handbook.md",
    tag="docs",
    metadata={"team": "people", "audience": "staff"},
    retention_epochs=3,
)

# Adopted by the blobId an earlier upload returned, kept alive when fewer than 7 epochs are left.
logo = tuskr.StoredFile(
    "logo",
    blob_id=config.require("logoBlobId"),
    name="logo.svg",
    tag="brand",
    metadata={"team": "web"},
    retention_epochs=5,
    keep_alive=tuskr.KeepAliveArgs(min_remaining_epochs=7, renew_epochs=30),
)

# A folder as one resource: one entry per content, each served with the type its name tells.
site = tuskr.StoredFolder(
    "site",
    path="site",
    tag="site",
    retention_epochs=3,
    files={"index.html": tuskr.FolderFileArgs(metadata={"page": "home"})},
)

# Another file read, nothing adopted: what the service says of it now (here, the logo's).
shared = tuskr.get_file_output(blob_id=logo.blob_id)

pulumi.export("handbook_blob_id", handbook.blob_id)
pulumi.export("site_urls", site.urls)
pulumi.export("logo_expires_at", logo.expires_at)
pulumi.export("logo_remaining_epochs", shared.remaining_epochs)
