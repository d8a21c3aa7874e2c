"""Writes a Java agent that does nothing, to the path given as the only argument.

LocalStack starts DynamoDB Local with `-javaagent:<its library folder>/ddb-local-loader-0.1.jar`,
an agent it downloads at run time whose one job is to raise DynamoDB Local's limit of 20
global secondary indexes per table. The project's tables have at most four, and nothing may be
downloaded at run time, so `npm run localstack` puts this agent in its place. The JVM only
requires of an agent jar a `Premain-Class` whose class has a static `premain` method: this
class file holds exactly that, assembled byte by byte so that no Java compiler is needed.
"""

import struct
import sys
import zipfile

CLASS_NAME = "LocalstackNoopAgent"


def class_file() -> bytes:
    pool: list[bytes] = []

    def utf8(text: str) -> int:
        data = text.encode()
        pool.append(b"\x01" + struct.pack(">H", len(data)) + data)
        return len(pool)

    def class_ref(name_index: int) -> int:
        pool.append(b"\x07" + struct.pack(">H", name_index))
        return len(pool)

    this_class = class_ref(utf8(CLASS_NAME))
    super_class = class_ref(utf8("java/lang/Object"))
    method_name = utf8("premain")
    descriptor = utf8("(Ljava/lang/String;)V")
    code_name = utf8("Code")

    # max_stack 0, max_locals 1 (the argument), one instruction: `return`.
    code = struct.pack(">HHI", 0, 1, 1) + b"\xb1" + struct.pack(">HH", 0, 0)
    method = struct.pack(">HHHH", 0x0009, method_name, descriptor, 1)  # public static
    method += struct.pack(">HI", code_name, len(code)) + code

    return b"".join(
        [
            struct.pack(">IHHH", 0xCAFEBABE, 0, 52, len(pool) + 1),  # Java 8 class format
            *pool,
            struct.pack(">HHHH", 0x0021, this_class, super_class, 0),  # public, no interfaces
            struct.pack(">H", 0),  # no fields
            struct.pack(">H", 1) + method,
            struct.pack(">H", 0),  # no attributes
        ]
    )


def main() -> None:
    with zipfile.ZipFile(sys.argv[1], "w") as jar:
        jar.writestr(
            "META-INF/MANIFEST.MF",
            f"Manifest-Version: 1.0\r\nPremain-Class: {CLASS_NAME}\r\n\r\n",
        )
        jar.writestr(f"{CLASS_NAME}.class", class_file())


if __name__ == "__main__":
    main()
