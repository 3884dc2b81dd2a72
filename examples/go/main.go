// Files kept on Tuskr from Go, through the tuskr provider plugin (see README.md).
package main

import (
	"github.com/pulumi-tuskr/pulumi-tuskr/sdk/go/tuskr"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")

		// Uploaded from its content: the blobId is an output.
		handbook, err := tuskr.NewStoredFile(ctx, "handbook", &tuskr.StoredFileArgs{
			Source:          pulumi.NewFileAsset("files/handbook.md"),
			Name:            pulumi.String("handbook.md"),
			Tag:             pulumi.String("docs"),
			Metadata:        pulumi.Map{"team": pulumi.String("people"), "audience": pulumi.String("staff")},
			RetentionEpochs: pulumi.Int(3),
		})
		if err != nil {
			return err
		}

		// Adopted by the blobId an earlier upload returned, kept alive when fewer than 7 epochs are left.
		logo, err := tuskr.NewStoredFile(ctx, "logo", &tuskr.StoredFileArgs{
			BlobId:          pulumi.String(cfg.Require("logoBlobId")),
			Name:            pulumi.String("logo.svg"),
			Tag:             pulumi.String("brand"),
			Metadata:        pulumi.Map{"team": pulumi.String("web")},
			RetentionEpochs: pulumi.Int(5),
			KeepAlive:       &tuskr.KeepAliveArgs{MinRemainingEpochs: pulumi.Int(7), RenewEpochs: pulumi.Int(30)},
		})
		if err != nil {
			return err
		}

		// A folder as one resource: one entry per content, each served with the type its name tells.
		site, err := tuskr.NewStoredFolder(ctx, "site", &tuskr.StoredFolderArgs{
			Path:            pulumi.String("site"),
			Tag:             pulumi.String("site"),
			RetentionEpochs: pulumi.Int(3),
			Files: tuskr.FolderFileMap{
				"index.html": &tuskr.FolderFileArgs{Metadata: pulumi.Map{"page": pulumi.String("home")}},
			},
		})
		if err != nil {
			return err
		}

		// Another file read, nothing adopted: what the service says of it now (here, the logo's).
		shared := tuskr.GetFileOutput(ctx, tuskr.GetFileOutputArgs{BlobId: logo.BlobId})

		ctx.Export("handbookBlobId", handbook.BlobId)
		ctx.Export("siteUrls", site.Urls)
		ctx.Export("logoExpiresAt", logo.ExpiresAt)
		ctx.Export("logoRemainingEpochs", shared.RemainingEpochs())
		return nil
	})
}
