"""Write a torch.save-shaped zip whose pickle calls `os.system`, with the standard library.

    python make_pickle.py OUT.pt MARKER

Loading it with `torch.load(weights_only=False)` would create MARKER; `tlc check` must
refuse it without running it.
"""

import sys
import zipfile


def main(out: str, marker: str) -> None:
    pickled = f"cos\nsystem\n(Vtouch {marker}\ntR.".encode()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
