import { InvalidDefinitionError } from "../core/errors.ts";
import { type AiSdkLanguageModel, SUPPORTED_SPECIFICATION_VERSIONS } from "./ai-sdk-spec.ts";
import { fromV2 } from "./ai-sdk-v2.ts";
import { fromV3, type V3View } from "./ai-sdk-v3.ts";
import { fromV4 } from "./ai-sdk-v4.ts";

/**
 * The adapter for a model's provider interface, chosen by its `specificationVersion`: v2 (AI SDK
 * 5), v3 (AI SDK 6) or v4 (AI SDK 7), each seen by the model path as v3.
 *
 * @throws InvalidDefinitionError for any other version (an AI SDK 4 `LanguageModelV1`, a version
 *   newer than this cairn, or not a language model at all), naming the versions supported.
 */
export function adaptModel(model: AiSdkLanguageModel): V3View {
  const version = (model as { specificationVersion?: unknown } | null)?.specificationVersion;
  switch (version) {
    case "v2":
      return fromV2(model as Extract<AiSdkLanguageModel, { specificationVersion: "v2" }>);
    case "v3":
      return fromV3(model as Extract<AiSdkLanguageModel, { specificationVersion: "v3" }>);
    case "v4":
      return fromV4(model as Extract<AiSdkLanguageModel, { specificationVersion: "v4" }>);
  }
  const what = version === undefined ? "no specificationVersion" : `specificationVersion ${JSON.stringify(version)}`;
  const name = typeof model === "object" && model !== null && "provider" in model ? ` (${String(model.provider)})` : "";
  throw new InvalidDefinitionError(
    `AiSdkModel was given a model${name} with ${what}: it accepts AI SDK language models of the provider interfaces ${SUPPORTED_SPECIFICATION_VERSIONS.join(", ")} (AI SDK 5, 6 and 7); upgrade the provider package (e.g. \`npm install @ai-sdk/openai@latest\`) or pass a model from one of those versions`,
  );
}
