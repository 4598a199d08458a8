// The TensorLoom extension: starts `tlc lsp` (the setting `tensorloom.server.command`)
// as a language server over stdio for .tl and .nml files. Highlighting comes from
// syntaxes/tensorloom.tmLanguage.json and needs no server.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const settings = vscode.workspace.getConfiguration("tensorloom");
  const [command, ...args] = settings.get("server.command", ["tlc", "lsp"]);
  const server = { command, args, transport: TransportKind.stdio };
  const options = {
    documentSelector: [
      { scheme: "file", language: "tensorloom" },
      { scheme: "file", language: "tensorloom-nml" },
    ],
    // `tlc lsp` reads {"inlayHints": {"shapes", "configs"}} at start-up, and the
    // `tensorloom` section again whenever the settings change.
    initializationOptions: {
      inlayHints: {
        shapes: settings.get("inlayHints.shapes", true),
        configs: settings.get("inlayHints.configs", true),
      },
    },
    synchronize: { configurationSection: "tensorloom" },
  };
  client = new LanguageClient("tensorloom", "TensorLoom", server, options);
  context.subscriptions.push(client);
  client.start().catch((error) => {
    vscode.window.showErrorMessage(
      `TensorLoom: could not start \`${command} ${args.join(" ")}\` (${error.message}). ` +
        "Install TensorLoom with its language server: pip install 'tensorloom[lsp]', " +
        "or set `tensorloom.server.command` to the full path of `tlc`."
    );
  });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
