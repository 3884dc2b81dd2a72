module github.com/pulumi-tuskr/pulumi-tuskr/tools/pulumi-language-nodejs

go 1.25.11

require (
	github.com/pulumi/pulumi/sdk/v3 v3.248.0
	google.golang.org/grpc v1.80.0
	google.golang.org/protobuf v1.36.11
)

require (
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260401024825-9d38bb4040a9 // indirect
)
