import asyncio


async def run(arg):
    await asyncio.sleep(0)
    return arg.upper()


async def check(ret):
    await asyncio.sleep(0)
    return ret.startswith("A")
