// Files kept on Tuskr from Java, through the tuskr provider plugin (see README.md).
package tuskr;

import com.pulumi.Pulumi;
import com.pulumi.asset.FileAsset;
import com.pulumi.tuskr.StoredFile;
import com.pulumi.tuskr.StoredFileArgs;
import com.pulumi.tuskr.StoredFolder;
import com.pulumi.tuskr.StoredFolderArgs;
import com.pulumi.tuskr.TuskrFunctions;
import com.pulumi.tuskr.inputs.FolderFileArgs;
import com.pulumi.tuskr.inputs.GetFileArgs;
import com.pulumi.tuskr.inputs.KeepAliveArgs;
import java.util.Map;

public class App {
    public static void main(String[] args) {
        Pulumi.run(ctx -> {
            // Uploaded from its content: the blobId is an output.
            var handbook = new StoredFile("handbook", StoredFileArgs.builder()
                .source(new FileAsset("files/handbook.md"))
                .name("handbook.md")
                .tag("docs")
                .metadata(Map.of("team", "people", "audience", "staff"))
                .retentionEpochs(3)
                .build());

            // Adopted by the blobId an earlier upload returned, kept alive when fewer than 7 epochs are left.
            var logo = new StoredFile("logo", StoredFileArgs.builder()
                .blobId(ctx.config().require("logoBlobId"))
                .name("logo.svg")
                .tag("brand")
                .metadata(Map.of("team", "web"))
                .retentionEpochs(5)
                .keepAlive(KeepAliveArgs.builder().minRemainingEpochs(7).renewEpochs(30).build())
                .build());

            // A folder as one resource: one entry per content, each served with the type its name tells.
            var site = new StoredFolder("site", StoredFolderArgs.builder()
                .path("site")
                .tag("site")
                .retentionEpochs(3)
                .files(Map.of("index.html", FolderFileArgs.builder().metadata(Map.of("page", "home")).build()))
                .build());

            // Another file read, nothing adopted: what the service says of it now (here, the logo's).
            var shared = TuskrFunctions.getFile(GetFileArgs.builder().blobId(logo.blobId()).build());

            ctx.export("handbookBlobId", handbook.blobId());
            ctx.export("siteUrls", site.urls());
            ctx.export("logoExpiresAt", logo.expiresAt());
            ctx.export("logoRemainingEpochs", shared.applyValue(f -> f.remainingEpochs()));
        });
    }
}
